// farmctl: the coordinator's command-line client (docs/FARMCTL.md).
#include <unistd.h>

#include <iostream>
#include <string>
#include <vector>

#include "farmctl/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return schedfarm::RunFarmctl(args, {std::cout, std::cerr, isatty(STDOUT_FILENO) == 1});
}
