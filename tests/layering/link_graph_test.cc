// The layering of the built binaries, read from the binaries themselves: the shared
// libraries each one needs (readelf -d) and the symbols it imports or holds (nm), so that
// Halide or Torch is caught also when compiled into a static library of the project. The
// checks prove themselves on farm-worker (Halide) and farm-learner (Torch).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {
namespace {

// A library some binaries must not link: the names of its shared objects and the
// namespaces of its C++ symbols, as regular expressions.
struct Library {
  const char* name;
  const char* shared_objects;  // over the names readelf lists as NEEDED
  const char* symbols;         // over demangled symbols
};
constexpr Library kHalide = {"Halide", "^libHalide", "(^|[^A-Za-z0-9_])Halide::"};
constexpr Library kTorch = {"Torch", "^lib(torch|c10)", "(^|[^A-Za-z0-9_])(torch|at|c10)::"};

// What a binary links.
struct LinkGraph {
  std::vector<std::string> needed;    // shared libraries (readelf -d: NEEDED)
  std::vector<std::string> imported;  // undefined dynamic symbols, demangled (nm -D)
  std::vector<std::string> held;      // symbols defined in the binary, demangled (nm)
};

// The lines `command` prints on stdout; an error when it cannot run or exits non-zero.
StatusOr<std::vector<std::string>> OutputLines(const std::string& command) {
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return Status::Error("cannot run: " + command);
  std::string output;
  char buffer[65536];
  while (size_t got = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, got);
  if (pclose(pipe) != 0) return Status::Error("failed: " + command);
  std::vector<std::string> lines;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

StatusOr<LinkGraph> ReadLinkGraph(const std::string& binary) {
  LinkGraph graph;
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> dynamic,
                             OutputLines("readelf -d --wide " + binary));
  const std::regex needed(R"(\(NEEDED\).*\[(.*)\])");
  for (const std::string& line : dynamic) {
    std::smatch match;
    if (std::regex_search(line, match, needed)) graph.needed.push_back(match[1]);
  }
  SCHEDFARM_ASSIGN_OR_RETURN(
      graph.imported, OutputLines("nm -C -D --undefined-only --format=just-symbols " + binary));
  SCHEDFARM_ASSIGN_OR_RETURN(graph.held,
                             OutputLines("nm -C --defined-only --format=just-symbols " + binary));
  // Without a symbol table (a stripped binary) nothing compiled in could be seen.
  if (graph.held.empty()) return Status::Error(binary + " has no symbol table");
  return graph;
}

// The first item of `items` that `pattern` matches, "" when none does.
std::string FirstMatch(const std::vector<std::string>& items, const char* pattern) {
  const std::regex re(pattern);
  for (const std::string& item : items) {
    if (std::regex_search(item, re)) return item;
  }
  return "";
}

// What ties a binary to a library, one example of each kind ("" where none).
struct Evidence {
  std::string needed, imported, held;

  bool none() const { return needed.empty() && imported.empty() && held.empty(); }
  std::string ToString() const {
    return "needs '" + needed + "', imports '" + imported + "', holds '" + held + "'";
  }
};

Evidence EvidenceOf(const LinkGraph& graph, const Library& library) {
  return {FirstMatch(graph.needed, library.shared_objects),
          FirstMatch(graph.imported, library.symbols), FirstMatch(graph.held, library.symbols)};
}

class Layering : public testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v readelf >/dev/null && command -v nm >/dev/null") != 0) {
      GTEST_SKIP() << "readelf or nm (binutils) is not installed: the link graph cannot be read";
    }
  }

  static void ExpectLinksNone(const std::string& binary, std::initializer_list<Library> libraries) {
    const StatusOr<LinkGraph> graph = ReadLinkGraph(binary);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    for (const Library& library : libraries) {
      const Evidence evidence = EvidenceOf(*graph, library);
      EXPECT_TRUE(evidence.none())
          << binary << " links " << library.name << ": " << evidence.ToString();
    }
  }

  // `binary` needs the library's shared objects, imports its symbols and holds some
  // (inline functions and templates compiled in): each kind of evidence is seen.
  static void ExpectLinksThreeWays(const std::string& binary, const Library& library) {
    const StatusOr<LinkGraph> graph = ReadLinkGraph(binary);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const Evidence evidence = EvidenceOf(*graph, library);
    EXPECT_NE(evidence.needed, "") << binary << ": " << evidence.ToString();
    EXPECT_NE(evidence.imported, "") << binary << ": " << evidence.ToString();
    EXPECT_NE(evidence.held, "") << binary << ": " << evidence.ToString();
  }
};

TEST_F(Layering, CoordinatorLinksNeitherHalideNorTorch) {
  ExpectLinksNone(FARM_COORDINATOR_BIN, {kHalide, kTorch});
}

TEST_F(Layering, WorkerLinksNoTorch) { ExpectLinksNone(FARM_WORKER_BIN, {kTorch}); }

TEST_F(Layering, FarmctlLinksNeitherHalideNorTorch) {
  ExpectLinksNone(FARMCTL_BIN, {kHalide, kTorch});
}

TEST_F(Layering, SeesHalideInTheWorker) { ExpectLinksThreeWays(FARM_WORKER_BIN, kHalide); }

TEST_F(Layering, SeesTorchInTheLearner) { ExpectLinksThreeWays(FARM_LEARNER_BIN, kTorch); }

TEST(LayeringPatterns, MatchTheLibrariesNamespacesOnly) {
  const auto matches = [](const Library& library, const std::string& symbol) {
    return FirstMatch({symbol}, library.symbols) == symbol;
  };
  EXPECT_TRUE(matches(kHalide, "Halide::Func::compute_root()"));
  EXPECT_TRUE(matches(kHalide, "schedfarm::Bind(std::vector<Halide::Func> const&)"));
  EXPECT_FALSE(matches(kHalide, "schedfarm::HalideTargetParams(int)"));
  EXPECT_FALSE(matches(kHalide, "schedfarm::NotHalide::Run()"));
  EXPECT_TRUE(matches(kTorch, "at::globalContext()"));
  EXPECT_TRUE(matches(kTorch, "c10::intrusive_ptr_target::~intrusive_ptr_target()"));
  EXPECT_TRUE(matches(kTorch, "torch::nn::Module::train(bool)"));
  EXPECT_FALSE(matches(kTorch, "std::__format::_Spec<char>::_M_parse_fill_and_align()"));
  EXPECT_FALSE(matches(kTorch, "schedfarm::flat::Parse()"));
  EXPECT_EQ(FirstMatch({"libHalide14.so.0"}, kHalide.shared_objects), "libHalide14.so.0");
  EXPECT_EQ(FirstMatch({"libtorch_cpu.so.1.13"}, kTorch.shared_objects), "libtorch_cpu.so.1.13");
  EXPECT_EQ(FirstMatch({"libc10.so.1.13"}, kTorch.shared_objects), "libc10.so.1.13");
  EXPECT_EQ(FirstMatch({"libzmq.so.5", "libc.so.6"}, kTorch.shared_objects), "");
}

}  // namespace
}  // namespace schedfarm
