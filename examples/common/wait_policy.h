#pragma once
// The example programs' default for how idle OpenMP threads wait: asleep (passive), unless the
// environment says otherwise.
//
// Measured with mnist_mlp (LayerNorm, 200 steps, two runs each, 2-core VM): with both cores
// free, two threads took 6.4 ms a step at batch 128 spinning (OpenMP's default) and 7.7 ms
// asleep, against 12.0 ms on one thread. With another process holding one core, two spinning
// threads took 20.8 ms, worse than one thread's 12.7 ms, because each waits, spinning, for the
// other to get its core back; asleep they took 12.8 ms. Sleeping costs a fifth on a machine of
// one's own and saves half or more on a shared one, so the examples sleep by default.
//
// OpenMP reads OMP_WAIT_POLICY once, when the program loads, so the only way to change it is
// to run the program again with it set: the first thing main() does is
//
//   examples::default_to_passive_waiting(argv);
//
// which, when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set, sets OMP_WAIT_POLICY=passive
// and executes the program afresh with the same arguments. OMP_WAIT_POLICY=active in the
// environment keeps the spinning default.

namespace examples {

// `program` is what runs again: this program by default. If it cannot be executed, nothing
// changes and the caller goes on.
void default_to_passive_waiting(char** argv, const char* program = "/proc/self/exe");

}  // namespace examples
