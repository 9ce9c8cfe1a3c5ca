#include "common/caches.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

class CachesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("caches_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A sysfs cache folder entry: dir_/indexN/{level,type,size}.
  void WriteIndex(int index, const std::string& level, const std::string& type,
                  const std::string& size) {
    const fs::path folder = dir_ / ("index" + std::to_string(index));
    fs::create_directories(folder);
    std::ofstream(folder / "level") << level << "\n";
    std::ofstream(folder / "type") << type << "\n";
    std::ofstream(folder / "size") << size << "\n";
  }

  fs::path dir_;
};

TEST_F(CachesTest, SysfsGivesEveryLevelItHas) {
  WriteIndex(0, "1", "Data", "48K");
  WriteIndex(1, "1", "Instruction", "32K");
  WriteIndex(2, "2", "Unified", "1024K");
  WriteIndex(3, "3", "Unified", "32M");
  const HostCaches caches = DetectHostCaches(dir_.string());
  EXPECT_EQ(caches.l1d.bytes, 48 << 10);
  EXPECT_EQ(caches.l2.bytes, 1 << 20);
  EXPECT_EQ(caches.l3.bytes, 32 << 20);
  EXPECT_EQ(caches.l1d.source, "sysfs");
  EXPECT_EQ(caches.l3.source, "sysfs");
  EXPECT_EQ(caches.LastLevel().bytes, 32 << 20);
}

// A virtual machine without a sysfs cache folder: the CPU itself still knows its L1 data
// and L2 caches (every x86 CPU the farm runs on answers one of the cpuid leaves).
TEST_F(CachesTest, WithoutSysfsTheCpuSaysAndSaysSo) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "cpuid is x86 only";
#endif
  const HostCaches caches = DetectHostCaches((dir_ / "absent").string());
  EXPECT_GT(caches.l1d.bytes, 0);
  EXPECT_GT(caches.l2.bytes, caches.l1d.bytes);
  EXPECT_EQ(caches.l1d.source.rfind("cpuid leaf 0x", 0), 0u) << caches.l1d.source;
  EXPECT_EQ(caches.l2.source.rfind("cpuid leaf 0x", 0), 0u) << caches.l2.source;
  // A plausible L1 data cache.
  EXPECT_GE(caches.l1d.bytes, 16 << 10);
  EXPECT_LE(caches.l1d.bytes, 2 << 20);
}

TEST_F(CachesTest, ALevelSysfsLacksComesFromTheCpu) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "cpuid is x86 only";
#endif
  WriteIndex(0, "1", "Data", "64K");
  const HostCaches caches = DetectHostCaches(dir_.string());
  EXPECT_EQ(caches.l1d.bytes, 64 << 10);
  EXPECT_EQ(caches.l1d.source, "sysfs");
  EXPECT_GT(caches.l2.bytes, 0);
  EXPECT_NE(caches.l2.source, "sysfs");
}

}  // namespace
}  // namespace schedfarm
