#include <iostream>

#include "common/LargeBuffers.h"
#include "sim/cli/Cli.h"

int main(int argc, char** argv) {
  gradwire::reuse_large_buffers();  // before LibTorch or a codec allocates anything large
  return gradwire::run_cli(argc, argv, std::cout, std::cerr);
}
