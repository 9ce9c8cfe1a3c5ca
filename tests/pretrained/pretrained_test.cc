// The pretrained models' file and resolution: a model written is read back whole; a
// file that is corrupt, truncated, of another kind or version is refused naming the
// file; a model of another kind or feature schema is refused naming both sides; a model
// serves a worker compatible with one of its hosts (another ISA flag or core count, not
// another vector width), one written before models described their hosts only its exact
// host kind; `pretrained` takes the fitting model nearest the worker or says what the
// models cover; a name that does not exist lists those that do.
#include "pretrained/pretrained.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/files.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

// A host of 64-byte vectors (AVX-512).
HostFingerprint Host(const std::string& cpu, int cores = 2) {
  HostFingerprint host;
  host.set_cpu_model(cpu);
  host.set_cores(cores);
  host.set_halide_target("x86-64-linux-avx-avx2-avx512-fma");
  host.add_isa_flags("avx2");
  host.add_isa_flags("avx512f");
  host.add_isa_flags("fma");
  return host;
}

// A host of 32-byte vectors (AVX2).
HostFingerprint Avx2Host(const std::string& cpu, int cores = 2) {
  HostFingerprint host;
  host.set_cpu_model(cpu);
  host.set_cores(cores);
  host.set_halide_target("x86-64-linux-avx-avx2-fma");
  host.add_isa_flags("avx2");
  host.add_isa_flags("fma");
  return host;
}

HostFingerprint WithFlag(HostFingerprint host, const std::string& flag) {
  host.add_isa_flags(flag);
  return host;
}

// A model of `kind` trained on `host`'s datasets, its host described.
PretrainedModel Model_(const std::string& kind, const HostFingerprint& host, int schema = 7) {
  PretrainedModel model;
  model.set_name(PretrainedName(kind, host));
  *model.mutable_host() = host;
  *model.add_hosts() = host;
  model.mutable_model()->set_kind(kind);
  model.mutable_model()->set_version(model.name() + "-1");
  model.mutable_model()->set_feature_schema_version(schema);
  model.mutable_model()->set_weights(std::string(1000, 'w'));
  (*model.mutable_model()->mutable_metrics())["pairwise_accuracy"] = 0.75;
  PretrainedDataset* dataset = model.add_datasets();
  dataset->set_id("abc");
  dataset->set_file("dataset-x.sfds");
  dataset->set_measurements(12);
  return model;
}

// A model as written before models described their hosts: `host` only.
PretrainedModel OlderModel(const std::string& kind, const HostFingerprint& host) {
  PretrainedModel model = Model_(kind, host);
  model.clear_hosts();
  return model;
}

void Write(const std::string& dir, const std::string& name, const PretrainedModel& model) {
  ASSERT_TRUE(WritePretrained(PretrainedPath(dir, name), model).ok()) << name;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PretrainedTest, NamesAreKindAndHostKind) {
  EXPECT_EQ(PretrainedName("gbt", Host("AMD EPYC")), "gbt-amd-epyc");
  EXPECT_EQ(PretrainedName("sage", Host("Intel(R) Xeon(R) Processor")),
            "sage-intel-r-xeon-r-processor");
  EXPECT_TRUE(IsPretrainedSource("pretrained"));
  EXPECT_TRUE(IsPretrainedSource("pretrained:gbt-amd-epyc"));
  EXPECT_FALSE(IsPretrainedSource("dataset-1"));
  EXPECT_EQ(PretrainedNameOf("pretrained:gbt-amd-epyc"), "gbt-amd-epyc");
  EXPECT_EQ(PretrainedNameOf("pretrained"), "");
  // Several host kinds: the distinct ones, sorted, joined with '+'.
  PretrainedModel model;
  *model.add_hosts() = Host("Intel Xeon");
  *model.add_hosts() = Host("AMD EPYC");
  *model.add_hosts() = Host("AMD EPYC", 8);
  EXPECT_EQ(PretrainedName("gbt", model.hosts()), "gbt-amd-epyc+intel-xeon");
}

TEST(PretrainedTest, AWrittenModelReadsBackWhole) {
  ScratchDir dir;
  PretrainedModel model = Model_("gbt", Host("AMD EPYC"));
  *model.add_hosts() = Avx2Host("Intel Xeon", 4);
  const std::string path = PretrainedPath(dir.path(), model.name());
  ASSERT_TRUE(WritePretrained(path, model).ok());
  StatusOr<PretrainedModel> read = ReadPretrained(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->SerializeAsString(), model.SerializeAsString());
  EXPECT_EQ(PretrainedNames(dir.path()), std::vector<std::string>{"gbt-amd-epyc"});
  const std::string shown = DescribePretrained(*read);
  EXPECT_TRUE(Contains(shown, "kind gbt")) << shown;
  EXPECT_TRUE(Contains(shown, "dataset-x.sfds")) << shown;
  EXPECT_TRUE(Contains(shown, "pairwise_accuracy 0.75")) << shown;
  // Every host it was trained on.
  EXPECT_TRUE(Contains(shown, "host: AMD EPYC, 2 cores")) << shown;
  EXPECT_TRUE(Contains(shown, "host: Intel Xeon, 4 cores")) << shown;
  const std::string older = DescribePretrained(OlderModel("gbt", Host("AMD EPYC")));
  EXPECT_TRUE(Contains(older, "no host description")) << older;
}

TEST(PretrainedTest, ABrokenFileIsRefusedNamingIt) {
  ScratchDir dir;
  const std::string path = PretrainedPath(dir.path(), "gbt-amd-epyc");
  ASSERT_TRUE(WritePretrained(path, Model_("gbt", Host("AMD EPYC"))).ok());
  StatusOr<std::string> bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok());
  struct Case {
    std::string what;
    std::string bytes;
    std::string message;
  };
  std::string flipped = *bytes;
  flipped[flipped.size() / 2] ^= 0x5a;
  std::string other_version = *bytes;
  other_version[4] = 9;
  const Case cases[] = {
      {"truncated", bytes->substr(0, bytes->size() - 7), "truncated or corrupt"},
      {"a flipped byte", flipped, "corrupt"},
      {"another version", other_version, "format version 9"},
      {"a dataset", "SFDS" + bytes->substr(4), "not a schedfarm pretrained model"},
      {"empty", "", "not a schedfarm pretrained model"},
  };
  for (const Case& c : cases) {
    const std::string broken = dir.Sub("broken.sfpm");
    ASSERT_TRUE(WriteFileAtomically(broken, c.bytes).ok());
    StatusOr<PretrainedModel> read = ReadPretrained(broken);
    ASSERT_FALSE(read.ok()) << c.what;
    EXPECT_TRUE(Contains(read.status().message(), broken))
        << c.what << ": " << read.status().message();
    EXPECT_TRUE(Contains(read.status().message(), c.message))
        << c.what << ": " << read.status().message();
  }
  StatusOr<PretrainedModel> missing = ReadPretrained(dir.Sub("none.sfpm"));
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status().message(), dir.Sub("none.sfpm")));
}

TEST(PretrainedTest, AModelOfAnotherKindOrSchemaIsRefusedNamingBoth) {
  const PretrainedModel model = Model_("gbt", Host("AMD EPYC"), 7);
  EXPECT_TRUE(CheckPretrainedFits(model, "gbt", 7, Host("AMD EPYC")).ok());
  const Status kind = CheckPretrainedFits(model, "sage", 7, Host("AMD EPYC"));
  EXPECT_TRUE(Contains(kind.message(), "a gbt model")) << kind.message();
  EXPECT_TRUE(Contains(kind.message(), "scores with sage")) << kind.message();
  const Status schema = CheckPretrainedFits(model, "gbt", 8, Host("AMD EPYC"));
  EXPECT_TRUE(Contains(schema.message(), "feature schema 7")) << schema.message();
  EXPECT_TRUE(Contains(schema.message(), "schema 8")) << schema.message();
}

TEST(PretrainedTest, AModelServesAWorkerWithAnotherIsaFlagOrCoreCountAndSaysWhatDiffers) {
  const PretrainedModel model = Model_("gbt", Host("AMD EPYC"));
  const HostFingerprint more_flags = WithFlag(Host("AMD EPYC"), "avx512_vp2intersect");
  const Status flag = CheckPretrainedFits(model, "gbt", 7, more_flags);
  EXPECT_TRUE(flag.ok()) << flag.message();
  EXPECT_EQ(HostDifferenceNote(model.hosts(0), more_flags),
            "trained on AMD EPYC, 2 cores, avx512; this worker: AMD EPYC, 2 cores, avx512, "
            "+avx512_vp2intersect");
  const Status cores = CheckPretrainedFits(model, "gbt", 7, Host("AMD EPYC", 64));
  EXPECT_TRUE(cores.ok()) << cores.message();
  EXPECT_EQ(HostDifferenceNote(model.hosts(0), Host("AMD EPYC", 64)),
            "trained on AMD EPYC, 2 cores, avx512; this worker: AMD EPYC, 64 cores, avx512");
  // Another CPU of the same vector width fits too; a flag the worker lacks is -flag.
  HostFingerprint fewer_flags = Host("Intel Xeon");
  fewer_flags.clear_isa_flags();
  fewer_flags.add_isa_flags("avx512f");
  EXPECT_TRUE(CheckPretrainedFits(model, "gbt", 7, fewer_flags).ok());
  EXPECT_EQ(HostDifferenceNote(model.hosts(0), fewer_flags),
            "trained on AMD EPYC, 2 cores, avx512; this worker: Intel Xeon, 2 cores, avx512, "
            "-avx2, -fma");
  EXPECT_EQ(HostDifferenceNote(model.hosts(0), Host("AMD EPYC")), "");
  // The note comes back with the model resolved.
  ScratchDir dir;
  Write(dir.path(), model.name(), model);
  bool found = false;
  std::string why, note;
  StatusOr<PretrainedModel> resolved = ResolvePretrained(dir.path(), "pretrained:gbt-amd-epyc",
                                                         "gbt", 7, more_flags, &found, &why, &note);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_TRUE(found);
  EXPECT_TRUE(Contains(note, "+avx512_vp2intersect")) << note;
  resolved =
      ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("AMD EPYC"), &found, &why, &note);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_TRUE(found);
  EXPECT_EQ(note, "");
}

TEST(PretrainedTest, AModelOfAnotherVectorWidthOrWithoutItsVectorFlagsIsRefused) {
  const Status wider =
      CheckPretrainedFits(Model_("gbt", Host("AMD EPYC")), "gbt", 7, Avx2Host("AMD EPYC"));
  ASSERT_FALSE(wider.ok());
  EXPECT_TRUE(Contains(wider.message(), "64-byte vectors")) << wider.message();
  EXPECT_TRUE(Contains(wider.message(), "32-byte vectors")) << wider.message();
  const Status narrower =
      CheckPretrainedFits(Model_("gbt", Avx2Host("Intel Xeon")), "gbt", 7, Host("Intel Xeon"));
  ASSERT_FALSE(narrower.ok());
  EXPECT_TRUE(Contains(narrower.message(), "32-byte vectors")) << narrower.message();
  EXPECT_TRUE(Contains(narrower.message(), "64-byte vectors")) << narrower.message();
  // The same width without the FMA the model's host had.
  HostFingerprint no_fma = Avx2Host("Intel Xeon");
  no_fma.clear_isa_flags();
  no_fma.add_isa_flags("avx2");
  const Status lacks = CheckPretrainedFits(Model_("gbt", Avx2Host("Intel Xeon")), "gbt", 7, no_fma);
  ASSERT_FALSE(lacks.ok());
  EXPECT_TRUE(Contains(lacks.message(), "lacks fma")) << lacks.message();
  EXPECT_EQ(HostIncompatibility(Avx2Host("Intel Xeon"), Avx2Host("AMD EPYC", 8)), "");
}

TEST(PretrainedTest, AnOlderFileServesOnlyItsExactHostKind) {
  const PretrainedModel older = OlderModel("gbt", Host("AMD EPYC"));
  EXPECT_TRUE(CheckPretrainedFits(older, "gbt", 7, Host("AMD EPYC")).ok());
  const Status flag =
      CheckPretrainedFits(older, "gbt", 7, WithFlag(Host("AMD EPYC"), "avx512_vp2intersect"));
  ASSERT_FALSE(flag.ok());
  EXPECT_TRUE(Contains(flag.message(), "carries no host description")) << flag.message();
  EXPECT_TRUE(Contains(flag.message(), "before models took the host as input")) << flag.message();
  EXPECT_TRUE(Contains(flag.message(), "avx512_vp2intersect")) << flag.message();
  const Status host = CheckPretrainedFits(older, "gbt", 7, Host("Intel Xeon"));
  EXPECT_TRUE(Contains(host.message(), "AMD EPYC")) << host.message();
  EXPECT_TRUE(Contains(host.message(), "Intel Xeon")) << host.message();
  const Status cores = CheckPretrainedFits(older, "gbt", 7, Host("AMD EPYC", 64));
  EXPECT_TRUE(Contains(cores.message(), "cores '2' against '64'")) << cores.message();
}

TEST(PretrainedTest, TheDistanceCountsWhatASchedulesSpeedDependsOn) {
  EXPECT_EQ(HostDistance(Host("AMD EPYC"), Host("AMD EPYC")), 0);
  EXPECT_DOUBLE_EQ(HostDistance(Host("AMD EPYC"), Host("Intel Xeon")), 1);
  EXPECT_DOUBLE_EQ(HostDistance(Host("AMD EPYC", 2), Host("AMD EPYC", 8)), 2);
  EXPECT_DOUBLE_EQ(HostDistance(Host("AMD EPYC"), WithFlag(Host("AMD EPYC"), "x")), 0.1);
  // Caches and peaks where both hosts know them.
  HostFingerprint a = Host("AMD EPYC"), b = Host("AMD EPYC");
  a.set_l2_bytes(1 << 20);
  EXPECT_EQ(HostDistance(a, b), 0);
  b.set_l2_bytes(1 << 21);
  b.set_l3_bytes(1 << 25);
  EXPECT_DOUBLE_EQ(HostDistance(a, b), 1);
  (*a.mutable_peak_gflops())[2] = 100;
  (*b.mutable_peak_gflops())[1] = 50;
  (*b.mutable_peak_gflops())[2] = 400;
  EXPECT_DOUBLE_EQ(HostDistance(a, b), 3);
}

TEST(PretrainedTest, PretrainedTakesTheNearestFittingModel) {
  ScratchDir dir;
  Write(dir.path(), "gbt-amd-epyc", Model_("gbt", Host("AMD EPYC")));
  Write(dir.path(), "gbt-intel-xeon", Model_("gbt", Host("Intel Xeon")));
  bool found = false;
  std::string why, note;
  StatusOr<PretrainedModel> model = ResolvePretrained(dir.path(), "pretrained", "gbt", 7,
                                                      Host("Intel Xeon", 4), &found, &why, &note);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(found);
  EXPECT_EQ(model->name(), "gbt-intel-xeon");
  EXPECT_EQ(note,
            "trained on Intel Xeon, 2 cores, avx512; this worker: Intel Xeon, 4 cores, avx512");
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("AMD EPYC", 8), &found, &why,
                            &note);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->name(), "gbt-amd-epyc");
  // A tie goes to the first name.
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("Other CPU"), &found, &why);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model->name(), "gbt-amd-epyc");

  // Within a model of several hosts, its nearest; the file found by its kind, not its name.
  ScratchDir several;
  PretrainedModel both = Model_("gbt", Host("AMD EPYC"));
  *both.add_hosts() = Host("Intel Xeon", 4);
  Write(several.path(), "my-model", both);
  model = ResolvePretrained(several.path(), "pretrained", "gbt", 7,
                            WithFlag(Host("Intel Xeon", 4), "avx512_vp2intersect"), &found, &why,
                            &note);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(found);
  EXPECT_EQ(note,
            "trained on Intel Xeon, 4 cores, avx512; this worker: Intel Xeon, 4 cores, avx512, "
            "+avx512_vp2intersect");
}

TEST(PretrainedTest, WhenNoneFitsTheCampaignStartsColdAndTheCoveredHostKindsAreListed) {
  ScratchDir dir;
  Write(dir.path(), "gbt-amd-epyc", Model_("gbt", Host("AMD EPYC")));
  Write(dir.path(), "gbt-old", OlderModel("gbt", Host("Old CPU")));
  Write(dir.path(), "sage-intel-xeon", Model_("sage", Avx2Host("Intel Xeon")));
  bool found = true;
  std::string why;
  StatusOr<PretrainedModel> model =
      ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Avx2Host("Intel Xeon"), &found, &why);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_FALSE(found);
  EXPECT_TRUE(Contains(why, "no pretrained gbt model fits this worker (Intel Xeon, 2 cores, avx2)"))
      << why;
  EXPECT_TRUE(Contains(why, "starts cold")) << why;
  EXPECT_TRUE(Contains(why, "gbt-amd-epyc (AMD EPYC, 2 cores, avx512)")) << why;
  EXPECT_TRUE(Contains(why, "64-byte vectors")) << why;
  EXPECT_TRUE(
      Contains(why, "gbt-old (Old CPU, 2 cores, avx512), which carries no host description"))
      << why;
  EXPECT_FALSE(Contains(why, "sage-intel-xeon (")) << "another kind is not listed: " << why;
  // None of the kind at all; another schema.
  model = ResolvePretrained(dir.path(), "pretrained", "gcn", 7, Host("AMD EPYC"), &found, &why);
  EXPECT_FALSE(found);
  EXPECT_TRUE(Contains(why, "there is no gcn model")) << why;
  EXPECT_TRUE(Contains(why, "there are: gbt-amd-epyc, gbt-old, sage-intel-xeon")) << why;
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 8, Host("AMD EPYC"), &found, &why);
  EXPECT_FALSE(found);
  EXPECT_TRUE(Contains(why, "feature schema 7")) << why;
  // A broken file in the folder is an error naming it.
  ASSERT_TRUE(WriteFileAtomically(PretrainedPath(dir.path(), "broken"), "junk").ok());
  model = ResolvePretrained(dir.path(), "pretrained", "gbt", 7, Host("AMD EPYC"), &found, &why);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "broken.sfpm")) << model.status().message();
}

TEST(PretrainedTest, ANamedModelMustExistAndFit) {
  ScratchDir dir;
  const PretrainedModel amd = Model_("gbt", Host("AMD EPYC"));
  Write(dir.path(), amd.name(), amd);
  bool found = false;
  std::string why;
  StatusOr<PretrainedModel> model = ResolvePretrained(dir.path(), "pretrained:gbt-amd-epyc", "gbt",
                                                      7, Avx2Host("Intel Xeon"), &found, &why);
  ASSERT_FALSE(model.ok());
  EXPECT_FALSE(found);
  const std::string& message = model.status().message();
  EXPECT_TRUE(Contains(message, "pretrained model 'gbt-amd-epyc'")) << message;
  EXPECT_TRUE(Contains(message, "AMD EPYC, 2 cores, avx512")) << message;
  EXPECT_TRUE(Contains(message, "Intel Xeon, 2 cores, avx2")) << message;
  model =
      ResolvePretrained(dir.path(), "pretrained:nope", "gbt", 7, Host("AMD EPYC"), &found, &why);
  ASSERT_FALSE(model.ok());
  EXPECT_TRUE(Contains(model.status().message(), "no pretrained model 'nope'"));
  EXPECT_TRUE(Contains(model.status().message(), "there are: gbt-amd-epyc"));
  const Status none = CheckPretrainedExists(dir.Sub("empty"), "x");
  EXPECT_TRUE(Contains(none.message(), "it holds none")) << none.message();
}

}  // namespace
}  // namespace schedfarm
