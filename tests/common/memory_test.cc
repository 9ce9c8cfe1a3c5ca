// The memory a process may use (common/memory.h): a cgroup's limit read from a file
// tree laid out as /sys/fs/cgroup is (v2 unified, v1 memory controller, limits on a
// parent, "max" and v1's unlimited value), and this process's figure on this machine.
#include "common/memory.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

class CgroupTree {
 public:
  CgroupTree() {
    root_ = fs::temp_directory_path() / ("memory_test." + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~CgroupTree() { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

TEST(Memory, CgroupV2LimitIsTheTightestAlongThePath) {
  CgroupTree tree;
  tree.Write("memory.max", "max");
  tree.Write("kubepods/memory.max", "8589934592");
  tree.Write("kubepods/pod1/memory.max", "max");
  tree.Write("kubepods/pod1/worker/memory.max", "17179869184");
  EXPECT_EQ(CgroupMemoryLimitBytes("0::/kubepods/pod1/worker\n", tree.root()),
            std::optional<int64_t>(8589934592))
      << "the parent's 8 GiB binds below the child's 16 GiB";
  tree.Write("kubepods/memory.max", "max");
  EXPECT_EQ(CgroupMemoryLimitBytes("0::/kubepods/pod1/worker\n", tree.root()),
            std::optional<int64_t>(17179869184));
  tree.Write("kubepods/pod1/worker/memory.max", "max");
  EXPECT_EQ(CgroupMemoryLimitBytes("0::/kubepods/pod1/worker\n", tree.root()), std::nullopt);
}

TEST(Memory, CgroupV1MemoryControllerAndItsUnlimitedValue) {
  CgroupTree tree;
  const std::string cgroup = "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n";
  tree.Write("memory/memory.limit_in_bytes", "9223372036854771712");  // v1's unlimited
  tree.Write("memory/docker/abc/memory.limit_in_bytes", "4294967296");
  EXPECT_EQ(CgroupMemoryLimitBytes(cgroup, tree.root()), std::optional<int64_t>(4294967296));
  tree.Write("memory/docker/abc/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(CgroupMemoryLimitBytes(cgroup, tree.root()), std::nullopt);
  // A cgroup path the mount does not show (a container sees its own cgroup as the
  // root): the root's limit is the container's.
  tree.Write("memory/memory.limit_in_bytes", "2147483648");
  EXPECT_EQ(CgroupMemoryLimitBytes("4:memory:/elsewhere/xyz\n", tree.root()),
            std::optional<int64_t>(2147483648));
}

TEST(Memory, UnreadableOrMalformedLimitsAreNoLimit) {
  CgroupTree tree;
  tree.Write("memory.max", "lots");
  EXPECT_EQ(CgroupMemoryLimitBytes("0::/\n", tree.root()), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimitBytes("garbage without colons\n", tree.root()), std::nullopt);
  EXPECT_EQ(CgroupMemoryLimitBytes("", tree.root()), std::nullopt);
}

TEST(Memory, ThisProcessMayUseAtMostTheHostsRam) {
  const int64_t physical = PhysicalMemoryBytes();
  const int64_t usable = UsableMemoryBytes();
  EXPECT_GT(physical, 0);
  EXPECT_GT(usable, 0);
  EXPECT_LE(usable, physical);
  std::printf("physical %lld MiB, usable %lld MiB\n", static_cast<long long>(physical >> 20),
              static_cast<long long>(usable >> 20));
}

}  // namespace
}  // namespace schedfarm
