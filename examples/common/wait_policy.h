#pragma once
// The example programs' default for how idle OpenMP threads wait: asleep (passive), unless the
// environment says otherwise.
//
// Why: two threads that spin while another process holds one of the cores wait, spinning, for
// each other to get a core back, and run slower than one thread; asleep they do not. Sleeping
// costs up to a fifth on a machine of one's own and saves about half on a shared one
// (bench/RESULTS.md, "Threads, determinism and OpenMP's wait policy"), so the examples sleep by
// default.
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
