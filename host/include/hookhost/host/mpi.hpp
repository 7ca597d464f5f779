// hookhost on MPI: the communicator over an MPI communicator, and MPI's start and end for a
// program of hookhost's own. An embedding MPI program keeps its own MPI_COMM_WORLD: it passes a
// communicator of its choice, and hookhost works on a duplicate of it.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <mpi.h>

#include "communicator.hpp"

namespace hookhost {

// A Communicator over a duplicate of `comm` (MPI must be initialised, with at least
// MPI_THREAD_FUNNELED; the calls come from the thread that runs the job). Collective over `comm`.
std::shared_ptr<Communicator> mpi_communicator(MPI_Comm comm);

// MPI_Init_thread on construction and MPI_Finalize on destruction, for a program that owns MPI.
class MpiEnvironment {
 public:
  MpiEnvironment();
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
};

// When this process was started by an MPI launcher (mpirun, mpiexec), the launcher's size, e.g.
// "OMPI_COMM_WORLD_SIZE=2"; nullopt otherwise. Reads the environment only: MPI need not be
// initialised.
std::optional<std::string> mpi_launcher_evidence();

}  // namespace hookhost
