// Where programs are: the path of the running program (so that what ships beside it,
// helper programs and scripts, is found from it) and a program's path by PATH's search.
#pragma once

#include <string>

namespace schedfarm {

// The running program's absolute path (/proc/self/exe), or "" when it cannot be read.
std::string ThisProgram();

// The folder of the running program, or "" when it cannot be read.
std::string ThisProgramFolder();

// The first executable file `name` in the folders of $PATH, or "" when none is.
std::string OnPath(const std::string& name);

}  // namespace schedfarm
