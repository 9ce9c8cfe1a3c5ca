// The layering of the source folders, read from the tree: every folder that builds a
// library or a program of its own (it has a CMakeLists.txt) is a node, and a
// `#include "folder/..."` in one of its files is an edge to the deepest such folder the
// path names. The graph must have no cycle: each dependency between folders runs one
// way. The check proves itself on a graph with one upward include added.
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

}  // namespace
}  // namespace schedfarm
