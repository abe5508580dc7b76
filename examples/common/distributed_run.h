#pragma once
// The programs' --distributed flag: `mpirun -np N program train ... --distributed` trains one
// model on N processes, data-parallel (distributed/data_parallel.h). Every rank reads the same
// data and folder, takes its own share of every epoch's batches, and averages its gradients
// with the others'; rank 0 alone writes the model folder, the logs and the progress line.
//
//   const examples::DistributedRun job = examples::join_job(flags.distributed, "gru_nmt");
//   if (job.writes()) save(...);

#include <normgrad/normgrad.h>

#include <CLI/CLI.hpp>
#include <string>

#include "data/shards.h"

namespace examples {

struct DistributedRun {
  int rank = 0, size = 1;
  int local_rank = 0;  // among the ranks on this machine (mpirun's OMPI_COMM_WORLD_LOCAL_RANK)
  bool several() const { return size > 1; }
  bool writes() const { return rank == 0; }  // what only one rank does: files, logs, progress
  normgrad::data::Shard shard() const { return {.count = size, .index = rank}; }
};

inline void add_distributed_flag(CLI::App* command, bool& distributed) {
  command->add_flag("--distributed", distributed,
                    "train data-parallel on the processes mpirun started (mpirun -np N ...)");
}

// Without `distributed`, a job of one. With it, joins the processes mpirun started: an Error
// naming `program` in a build without the distributed component. The number of CPU threads of
// each rank, unless `threads` or OMP_NUM_THREADS says, becomes the machine's cores divided
// among the ranks on it (mpirun's OMPI_COMM_WORLD_LOCAL_SIZE), so that they do not crowd.
DistributedRun join_job(bool distributed, int threads, const std::string& program);

// This rank's device: `device` itself, except that a job of several ranks asked for "cuda"
// gives each rank on a machine its own GPU, cuda:(local rank mod the GPUs there).
normgrad::Device device_for_rank(normgrad::Device device, const DistributedRun& job);

// Ends the whole job with `code` when this process is one rank of several (the others may be
// waiting for it in a collective, and would wait until their timeout); returns `code` otherwise.
// For the programs' error handlers, after the message is printed.
int end_job(int code);

}  // namespace examples
