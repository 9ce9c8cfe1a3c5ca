#include "pipeline/lowered_names.h"

#include <cctype>
#include <iterator>
#include <set>

namespace schedfarm {
namespace {

bool IsLoopName(const std::string& s) {
  auto digits_from = [&](size_t i) {
    if (i >= s.size()) return false;
    for (size_t j = i; j < s.size(); ++j) {
      if (!std::isdigit(static_cast<unsigned char>(s[j]))) return false;
    }
    return true;
  };
  return s == "rc" || s == "rk" || (s[0] == 'd' && digits_from(1)) ||
         (s[0] == 'r' && digits_from(1)) || (s.rfind("rk", 0) == 0 && digits_from(2));
}

// Halide's JIT names the compiled pipeline function after the first output Func, in
// the same LLVM module as the math and runtime code it calls: a Func named like a C
// library function (exp, tanh, free...) would capture that function's calls.
bool IsCSymbol(const std::string& s) {
  static const std::set<std::string> kSymbols = [] {
    const char* math[] = {
        "acos",  "asin",      "atan",   "atan2",    "cos",    "sin",         "tan",
        "acosh", "asinh",     "atanh",  "cosh",     "sinh",   "tanh",        "exp",
        "exp2",  "expm1",     "exp10",  "frexp",    "ldexp",  "log",         "log10",
        "log1p", "log2",      "logb",   "ilogb",    "modf",   "scalbn",      "scalbln",
        "cbrt",  "fabs",      "hypot",  "pow",      "pow10",  "sqrt",        "erf",
        "erfc",  "lgamma",    "tgamma", "gamma",    "ceil",   "floor",       "nearbyint",
        "rint",  "lrint",     "llrint", "round",    "lround", "llround",     "trunc",
        "fmod",  "remainder", "remquo", "copysign", "nan",    "nextafter",   "nexttoward",
        "fdim",  "fmax",      "fmin",   "fma",      "sincos", "significand", "drem",
        "j0",    "j1",        "jn",     "y0",       "y1",     "yn"};
    const char* libc[] = {
        "abs",       "labs",   "llabs",   "div",     "ldiv",          "lldiv",
        "malloc",    "calloc", "realloc", "free",    "aligned_alloc", "posix_memalign",
        "memalign",  "memcpy", "memmove", "memset",  "memcmp",        "memchr",
        "strlen",    "strcmp", "strncmp", "strcpy",  "strncpy",       "strcat",
        "strchr",    "strstr", "strdup",  "abort",   "exit",          "atexit",
        "getenv",    "setenv", "printf",  "fprintf", "sprintf",       "snprintf",
        "vsnprintf", "puts",   "fputs",   "write",   "read",          "open",
        "close",     "fopen",  "fclose",  "fwrite",  "fread",         "fflush",
        "stdout",    "stderr", "stdin",   "atoi",    "atol",          "atof",
        "strtol",    "strtod", "qsort",   "bsearch", "rand",          "srand",
        "time",      "clock",  "sleep",   "usleep",  "nanosleep",     "sched_yield",
        "sysconf",   "dlopen", "dlsym",   "dlclose", "dlerror",       "errno",
        "assert",    "main"};
    std::set<std::string> symbols(std::begin(libc), std::end(libc));
    for (const char* f : math) {
      symbols.insert(f);
      symbols.insert(std::string(f) + "f");
      symbols.insert(std::string(f) + "l");
    }
    return symbols;
  }();
  for (const char* prefix : {"halide_", "pthread_", "llvm"}) {
    if (s.rfind(prefix, 0) == 0) return true;
  }
  return kSymbols.count(s) > 0;
}

class NameTable {
 public:
  // A C identifier derived from `name`, distinct from every name returned before, from
  // the loop dimension names and from C library symbols.
  std::string Unique(const std::string& name) {
    std::string base;
    for (char c : name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (base.empty() || !std::isalpha(static_cast<unsigned char>(base[0]))) base = "t" + base;
    if (IsLoopName(base) || IsCSymbol(base)) base += "_";
    std::string candidate = base;
    for (int i = 2; used_.count(candidate); ++i) candidate = base + "_" + std::to_string(i);
    used_.insert(candidate);
    return candidate;
  }

 private:
  std::set<std::string> used_;
};

}  // namespace

LoweredNames LoweredNamesOf(const PipelineGraph& graph) {
  const PipelineSpec& spec = graph.spec();
  NameTable table;
  LoweredNames names;
  for (const TensorDecl& input : spec.inputs()) names.inputs.push_back(table.Unique(input.name()));
  for (const Parameter& parameter : spec.parameters()) {
    names.parameters.push_back(table.Unique(parameter.tensor().name()));
  }
  for (int s = 0; s < graph.num_stages(); ++s) {
    names.stages.push_back(table.Unique(graph.stage(s).name()));
  }
  return names;
}

}  // namespace schedfarm
