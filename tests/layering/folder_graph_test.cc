// The layering of the source folders, read from the tree: every folder that builds a
// library or a program of its own (it has a CMakeLists.txt) is a node, and a
// `#include "folder/..."` in one of its files is an edge to the deepest such folder the
// path names. The graph must have no cycle: each dependency between folders runs one
// way. And the top-level folders stand in a declared order of layers (kLayers): a folder
// includes only folders of lower layers, so an uphill include fails naming its file
// even where it closes no cycle, and a new folder must be given its place. Both checks
// prove themselves on the graph with one upward include added.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

// The top-level folders of the project's code: each with a CMakeLists.txt, except
// tests/, which depends on everything.
std::set<std::string> CodeRoots(const fs::path& source) {
  std::set<std::string> roots;
  for (const auto& entry : fs::directory_iterator(source)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name != "tests" && fs::exists(entry.path() / "CMakeLists.txt")) {
      roots.insert(name);
    }
  }
  return roots;
}

// The layers of the top-level folders, lowest first: what runs on what. A folder may
// include folders of the layers below its own, never of its own or above.
const std::vector<std::vector<std::string>> kLayers = {
    {"common", "proto"},                            // helpers, the wire and storage formats
    {"protocol", "evaluation"},                     // messages and links; how models are judged
    {"pipeline"},                                   // the IR, its readers, Halide and Torch
    {"timing", "dataset", "storage", "scheduler"},  // on pipelines: measuring, data, space
    {"search", "network", "pretrained"},            // strategies, networks as tasks, models shipped
    {"learner", "campaign", "worker"},              // models; campaigns; the worker
    {"coordinator", "learner_daemon", "tools"},     // the farm's processes and tools
    {"farmctl", "fuzz"},                            // the CLI, fuzz targets
    {"bench"},                                      // benchmarks of everything
};

// The top-level folder of a node ("pipeline/halide" -> "pipeline").
std::string TopFolder(const std::string& node) { return node.substr(0, node.find('/')); }

// An include of one folder by another: where it was written and what it names.
struct Edge {
  std::string file;
  std::string include;
};
using FolderGraph = std::map<std::string, std::map<std::string, Edge>>;  // from -> to -> one

// The deepest folder at or above `path` (relative to `source`) with a CMakeLists.txt.
std::string NodeOf(const fs::path& source, fs::path path) {
  for (path = path.parent_path(); !path.empty(); path = path.parent_path()) {
    if (fs::exists(source / path / "CMakeLists.txt")) return path.string();
  }
  return "";
}

FolderGraph ReadFolderGraph(const fs::path& source) {
  const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
  const std::set<std::string> roots = CodeRoots(source);
  FolderGraph graph;
  for (const std::string& root : roots) {
    for (const auto& entry : fs::recursive_directory_iterator(source / root)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cc" && ext != ".h")) continue;
      const fs::path relative = fs::relative(entry.path(), source);
      const std::string from = NodeOf(source, relative);
      std::ifstream in(entry.path());
      for (std::string line; std::getline(in, line);) {
        std::smatch match;
        if (!std::regex_search(line, match, include)) continue;
        const std::string target = match[1];
        if (!roots.count(target.substr(0, target.find('/')))) continue;  // not a folder of ours
        const std::string to = NodeOf(source, target);
        if (!to.empty() && to != from) graph[from].emplace(to, Edge{relative.string(), target});
      }
    }
  }
  return graph;
}

// A cycle of the graph as "a -> b (file includes x) -> ... -> a", or "" when it has none.
std::string FindCycle(const FolderGraph& graph) {
  std::map<std::string, int> state;  // 1: on the path being walked, 2: done
  std::vector<std::string> path;
  std::string cycle;
  std::function<bool(const std::string&)> walk = [&](const std::string& node) {
    state[node] = 1;
    path.push_back(node);
    auto out = graph.find(node);
    if (out != graph.end()) {
      for (const auto& [to, edge] : out->second) {
        if (state[to] == 1) {
          auto at = std::find(path.begin(), path.end(), to);
          for (auto it = at; it != path.end(); ++it) {
            const std::string& next = std::next(it) == path.end() ? to : *std::next(it);
            const Edge& e = graph.at(*it).at(next);
            cycle += *it + " -> " + next + " (" + e.file + " includes " + e.include + ")\n";
          }
          return true;
        }
        if (state[to] == 0 && walk(to)) return true;
      }
    }
    path.pop_back();
    state[node] = 2;
    return false;
  };
  for (const auto& [node, edges] : graph) {
    if (state[node] == 0 && walk(node)) return cycle;
  }
  return "";
}

// Each include that does not run down the layers, as "from (layer i) includes to (layer
// j): file includes path" lines, and each top-level folder kLayers lacks; "" when none.
std::string UphillIncludes(const FolderGraph& graph, const std::set<std::string>& roots) {
  std::map<std::string, size_t> layer;
  for (size_t i = 0; i < kLayers.size(); ++i) {
    for (const std::string& folder : kLayers[i]) layer[folder] = i;
  }
  std::string out;
  for (const std::string& root : roots) {
    if (!layer.count(root)) out += root + " has no layer in kLayers\n";
  }
  for (const auto& [from, edges] : graph) {
    for (const auto& [to, edge] : edges) {
      const std::string a = TopFolder(from), b = TopFolder(to);
      if (a == b || !layer.count(a) || !layer.count(b) || layer[b] < layer[a]) continue;
      out += a + " (layer " + std::to_string(layer[a]) + ") includes " + b + " (layer " +
             std::to_string(layer[b]) + "): " + edge.file + " includes " + edge.include + "\n";
    }
  }
  return out;
}

TEST(FolderGraph, EveryDependencyBetweenFoldersRunsOneWay) {
  const FolderGraph graph = ReadFolderGraph(SCHEDFARM_SOURCE_DIR);
  ASSERT_GT(graph.size(), 15u) << "the tree was not read";
  EXPECT_TRUE(graph.at("coordinator").count("storage")) << "an edge the tree has is seen";
  // Campaigns and farmctl stand below the models: they judge predictions through
  // evaluation/, and only the learner process (and the benchmarks) take the learner.
  EXPECT_FALSE(graph.at("campaign").count("learner"));
  EXPECT_FALSE(graph.at("farmctl").count("learner"));
  EXPECT_EQ(FindCycle(graph), "") << "folders that depend on each other";
}

TEST(FolderGraph, EveryFolderIncludesOnlyTheLayersBelowIt) {
  const FolderGraph graph = ReadFolderGraph(SCHEDFARM_SOURCE_DIR);
  ASSERT_GT(graph.size(), 15u) << "the tree was not read";
  EXPECT_EQ(UphillIncludes(graph, CodeRoots(SCHEDFARM_SOURCE_DIR)), "");
}

// The check on the real graph with one upward include added: storage/ including
// coordinator/ closes the loop coordinator -> storage -> coordinator.
TEST(FolderGraph, AnUpwardIncludeIsACycleNamingTheFile) {
  FolderGraph graph = ReadFolderGraph(SCHEDFARM_SOURCE_DIR);
  graph["storage"].emplace("coordinator",
                           Edge{"storage/store.cc", "coordinator/coordinator.h"});
  const std::string cycle = FindCycle(graph);
  EXPECT_NE(cycle.find("storage -> coordinator (storage/store.cc includes "
                       "coordinator/coordinator.h)"),
            std::string::npos)
      << cycle;
}

// An uphill include that closes no cycle (the Halide runner once took the repeat count
// from timing/, which stands on pipeline/) fails by the layers, naming the file.
TEST(FolderGraph, AnUphillIncludeFailsByTheLayersNamingTheFile) {
  FolderGraph graph = ReadFolderGraph(SCHEDFARM_SOURCE_DIR);
  graph["pipeline/halide"].emplace("timing",
                                   Edge{"pipeline/halide/runner.cc", "timing/run_phase.h"});
  EXPECT_EQ(FindCycle(graph), "") << "pipeline/halide is a node of its own";
  const std::string uphill = UphillIncludes(graph, CodeRoots(SCHEDFARM_SOURCE_DIR));
  EXPECT_NE(uphill.find("pipeline (layer 2) includes timing (layer 3): "
                        "pipeline/halide/runner.cc includes timing/run_phase.h"),
            std::string::npos)
      << uphill;
  std::set<std::string> roots = CodeRoots(SCHEDFARM_SOURCE_DIR);
  roots.insert("newfolder");
  EXPECT_NE(UphillIncludes(graph, roots).find("newfolder has no layer in kLayers"),
            std::string::npos);
}

}  // namespace
}  // namespace schedfarm
