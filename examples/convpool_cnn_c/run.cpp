#include "run.h"

#include <filesystem>
#include <iostream>

#include "common/progress.h"
#include "common/training_loop.h"

namespace convpool_cnn_c {

namespace ng = normgrad;
namespace fs = std::filesystem;

ng::data::ZcaWhitening load_whitening(const ModelFolder& folder) {
  return ng::data::ZcaWhitening::from_state(
      ng::io::load_tensors(folder.file("whitening.safetensors")));
}

std::vector<EpochRecord> train_in_folder(const ModelFolder& folder, const RunConfig& run,
                                         ng::Device device, bool progress_bar, std::FILE* log,
                                         const ng::data::Shard& shard,
                                         const examples::ProfileFlags& profile) {
  const bool writes = shard.index == 0;
  if (!writes) {  // the other ranks train in silence
    progress_bar = false;
    log = nullptr;
  }
  const auto print = [&](auto... values) {
    if (log != nullptr) std::fprintf(log, values...);
  };
  std::optional<ng::data::ZcaWhitening> whitening;
  if (fs::exists(folder.file("whitening.safetensors"))) whitening = load_whitening(folder);
  if (writes)
    std::fprintf(stderr, "convpool_cnn_c: %s, %s: preparing the images%s\n",
                 dataset_name(run.data.kind).c_str(), run.model.norm.c_str(),
                 whitening ? "" : " and fitting the ZCA whitening");
  const PreparedData data = prepare_data(run.data, whitening);
  // Every rank meets the others here (DataParallel) before rank 0 writes anything.
  Trainer trainer(run.model, run.training, data, device, shard);
  if (writes && !folder.has_config()) folder.write_config(run);
  if (writes && !whitening)
    ng::io::save_tensors(data.whitening->state(), folder.file("whitening.safetensors"));
  if (fs::exists(folder.file("state.safetensors"))) {
    trainer.load_state(folder.file("state.safetensors"));
    if (writes)
      std::fprintf(stderr, "convpool_cnn_c: continuing '%s' after epoch %lld of %lld\n",
                   folder.path().c_str(), static_cast<long long>(trainer.epochs_done()),
                   static_cast<long long>(run.training.epochs));
  }
  print("%s: %lld parameters, %lld training and %lld test images, %lld batches an epoch\n",
        run.model.norm.c_str(), static_cast<long long>(count_parameters(trainer.model())),
        static_cast<long long>(data.train.images.size(0)),
        static_cast<long long>(data.test.images.size(0)),
        static_cast<long long>(trainer.batches_per_epoch()));
  // Elsewhere than on a terminal, the line after each epoch below says as much.
  const std::int64_t batches = trainer.batches_per_epoch();
  examples::ProgressLine progress({.out = progress_bar ? &std::cerr : nullptr,
                                   .redraw = true,
                                   .total_steps = run.training.epochs * batches,
                                   .steps_per_epoch = batches,
                                   .epochs = run.training.epochs});
  // A step of the loop is an epoch: its records, its line and its training state. A profile
  // holds batches.
  examples::StepProfile step_profile(writes ? profile : examples::ProfileFlags{}, trainer.model(),
                                     "convpool_cnn_c");
  const auto train_epoch = [&] {
    const auto on_batch = [&](const StepReport& step) {
      progress.update((step.epoch - 1) * batches + step.batch, step.loss);
      step_profile.step_finished();
    };
    return trainer.run_epoch(on_batch).train_loss;
  };
  const auto print_epoch = [&](const examples::StepDone&) {
    const EpochRecord& r = trainer.history().back();
    progress.clear();
    print("epoch %3lld/%lld  loss %.4f  train error %6.2f%%  test error %6.2f%%  %.1f s\n",
          static_cast<long long>(r.epoch), static_cast<long long>(run.training.epochs),
          r.train_loss, 100 * r.train_error, 100 * r.test_error, r.seconds);
    if (log != nullptr) std::fflush(log);
  };
  const auto save_state = [&](const examples::LoopRecord&) {
    if (!writes) return;
    trainer.save_state(folder.file("state.safetensors"));
    ng::io::save(trainer.model(), folder.file("model.safetensors"));
    folder.write_text("train.csv", history_csv(trainer.history()));
  };
  examples::LoopRecord record{.step = trainer.epochs_done()};
  examples::run_training_loop(
      {.steps = run.training.epochs, .save_every = 1}, record,
      {.train_step = train_epoch, .after_step = print_epoch, .save_state = save_state});
  const EpochRecord& last = trainer.history().back();
  print("%s: test error %.2f%% after %lld epochs; model folder %s\n", run.model.norm.c_str(),
        100 * last.test_error, static_cast<long long>(last.epoch), folder.path().c_str());
  return trainer.history();
}

}  // namespace convpool_cnn_c
