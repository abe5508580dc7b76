#include "program.h"

namespace gru_nmt {

nmt::TrainSummary train(const TrainOptions& options) { return nmt::train<Program>(options); }

}  // namespace gru_nmt
