#include "pipeline/source/source.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "common/files.h"
#include "common/text.h"
#include "pipeline/onnx/onnx_import.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/yaml_io.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace {

enum class Kind { kZoo, kRandom, kYaml, kOnnx, kProto };

bool IsZooName(const std::string& name) {
  for (const std::string& n : ZooNames()) {
    if (n == name) return true;
  }
  return false;
}

std::string ZooNameOf(const std::string& source) {
  return source.rfind("zoo:", 0) == 0 ? source.substr(4) : source;
}

// The kind of `source`, or a usage error.
StatusOr<Kind> KindOf(const std::string& source) {
  if (source.rfind("zoo:", 0) == 0 || IsZooName(source)) return Kind::kZoo;
  if (source.rfind("random:", 0) == 0) return Kind::kRandom;
  if (EndsWith(source, ".yaml") || EndsWith(source, ".yml")) return Kind::kYaml;
  if (EndsWith(source, ".onnx")) return Kind::kOnnx;
  if (EndsWith(source, ".pb")) return Kind::kProto;
  std::string known;
  for (const std::string& n : ZooNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::Error("unknown SOURCE '" + source +
                       "': not a zoo block, random:SEED, or a .yaml/.yml/.onnx/.pb file (zoo "
                       "blocks: " +
                       known + ")");
}

StatusOr<uint64_t> SeedOf(const std::string& source) {
  const std::string seed_text = source.substr(7);
  errno = 0;
  char* end = nullptr;
  const unsigned long long seed = std::strtoull(seed_text.c_str(), &end, 10);
  if (seed_text.empty() || *end != '\0' || errno != 0 || seed_text[0] == '-') {
    return Status::Error("source '" + source + "': the seed must be a non-negative integer");
  }
  return static_cast<uint64_t>(seed);
}

// Functions whose computation the math mode selects (as the operator library sets it).
bool ReadsMathMode(UnaryFn fn) {
  switch (fn) {
    case SIGMOID:
    case TANH:
    case GELU:
    case EXP:
    case LOG:
    case ERF:
    case ELU:
    case SOFTPLUS:
    case SILU:
    case SIN:
    case COS:
    case SQRT:
    case RSQRT:
      return true;
    default:
      return false;
  }
}

}  // namespace

Status CheckPipelineSource(const std::string& source, const PipelineSourceOptions& options) {
  SCHEDFARM_ASSIGN_OR_RETURN(const Kind kind, KindOf(source));
  if (kind != Kind::kZoo) {
    const std::vector<std::pair<const char*, bool>> zoo_only = {
        {"--dtype", options.dtype.has_value()},
        {"--spatial-scale", options.spatial_scale.has_value()},
        {"--channel-scale", options.channel_scale.has_value()},
        {"--batch", options.batch.has_value()}};
    for (const auto& [flag, given] : zoo_only) {
      if (given)
        return Status::Error(std::string("option ") + flag + " applies to zoo blocks only");
    }
  }
  if (kind != Kind::kRandom) {
    const std::vector<std::pair<const char*, bool>> random_only = {
        {"--max-ops", options.max_ops.has_value()},
        {"--max-elements", options.max_elements.has_value()},
        {"--max-flops", options.max_flops.has_value()}};
    for (const auto& [flag, given] : random_only) {
      if (given)
        return Status::Error(std::string("option ") + flag + " applies to random pipelines only");
    }
  }
  if (kind == Kind::kZoo && !IsZooName(ZooNameOf(source))) {
    StatusOr<PipelineSpec> error = MakeZooBlock(ZooNameOf(source));
    return Status::Error(error.ok() ? "unknown zoo block '" + ZooNameOf(source) + "'"
                                    : error.status().message());
  }
  if (kind == Kind::kRandom) return SeedOf(source).status();
  return Status::Ok();
}

StatusOr<PipelineGraph> LoadPipelineSource(const std::string& source,
                                           const PipelineSourceOptions& options) {
  SCHEDFARM_RETURN_IF_ERROR(CheckPipelineSource(source, options));
  SCHEDFARM_ASSIGN_OR_RETURN(const Kind kind, KindOf(source));
  const MathMode math = options.math.value_or(EXACT);
  PipelineSpec spec;
  bool override_math = false;
  switch (kind) {
    case Kind::kZoo: {
      ZooOptions zoo;
      zoo.math = math;
      zoo.dtype = options.dtype.value_or(zoo.dtype);
      zoo.spatial_scale = options.spatial_scale.value_or(zoo.spatial_scale);
      zoo.channel_scale = options.channel_scale.value_or(zoo.channel_scale);
      zoo.batch = options.batch.value_or(zoo.batch);
      SCHEDFARM_ASSIGN_OR_RETURN(spec, MakeZooBlock(ZooNameOf(source), zoo));
      break;
    }
    case Kind::kRandom: {
      SCHEDFARM_ASSIGN_OR_RETURN(const uint64_t seed, SeedOf(source));
      RandomPipelineOptions random;
      random.math = math;
      random.max_ops = options.max_ops.value_or(random.max_ops);
      random.max_elements = options.max_elements.value_or(random.max_elements);
      random.max_flops = options.max_flops.value_or(random.max_flops);
      SCHEDFARM_ASSIGN_OR_RETURN(spec, RandomPipeline(seed, random));
      break;
    }
    case Kind::kYaml: {
      SCHEDFARM_ASSIGN_OR_RETURN(const std::string text, ReadFileBytes(source));
      SCHEDFARM_ASSIGN_OR_RETURN(spec, PipelineFromYaml(text, source));
      override_math = options.math.has_value();
      break;
    }
    case Kind::kOnnx: {
      SCHEDFARM_ASSIGN_OR_RETURN(const std::string bytes, ReadFileBytes(source));
      OnnxImportOptions onnx;
      onnx.math = math;
      SCHEDFARM_ASSIGN_OR_RETURN(spec, ImportOnnxModel(bytes, source, onnx));
      break;
    }
    case Kind::kProto: {
      SCHEDFARM_ASSIGN_OR_RETURN(const std::string bytes, ReadFileBytes(source));
      SCHEDFARM_ASSIGN_OR_RETURN(const PipelineGraph parsed, ParsePipelineSpec(bytes, source));
      spec = parsed.spec();
      override_math = options.math.has_value();
      break;
    }
  }
  if (override_math) {
    for (Stage& stage : *spec.mutable_stages()) {
      if (stage.op() == UNARY && ReadsMathMode(stage.attrs().unary())) {
        stage.mutable_attrs()->set_math(math);
      }
    }
  }
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(std::move(spec));
  if (!graph.ok()) return graph.status().WithContext(source);
  return graph;
}

}  // namespace schedfarm
