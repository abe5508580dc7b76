#pragma once
// One thread setting for the whole library: our OpenMP loops and the BLAS library's GEMMs.
// At start-up it follows OMP_NUM_THREADS when that is set, else the number of cores.

namespace normgrad {

void set_num_threads(int threads);  // threads >= 1
int get_num_threads();

}  // namespace normgrad
