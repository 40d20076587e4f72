#include <iostream>

#include "sim/Cli.h"

int main(int argc, char** argv) { return gradwire::run_cli(argc, argv, std::cout, std::cerr); }
