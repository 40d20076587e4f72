#include <iostream>

#include "common/InterruptCleanup.h"
#include "common/LargeBuffers.h"
#include "sim/cli/Cli.h"

int main(int argc, char** argv) {
  // Before any thread exists, so every thread leaves SIGINT/SIGTERM/SIGHUP to the one that
  // cleans up (staging folders, child processes) and exits 130/143.
  gradwire::InterruptCleanup::install();
  gradwire::reuse_large_buffers();  // before LibTorch or a codec allocates anything large
  return gradwire::run_cli(argc, argv, std::cout, std::cerr);
}
