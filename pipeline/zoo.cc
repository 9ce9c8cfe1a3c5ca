#include "pipeline/zoo.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "pipeline/builder.h"
#include "pipeline/ops.h"

namespace schedfarm {
namespace {

// Applies ZooOptions' scales to a block's default sizes.
class Sizes {
 public:
  explicit Sizes(const ZooOptions& options) : options_(options) {}

  // A channel count (or hidden size), scaled and rounded to a multiple of `multiple`.
  int64_t Channels(int64_t c, int64_t multiple = 1) const {
    const double scaled = static_cast<double>(c) * options_.channel_scale / multiple;
    return std::max<int64_t>(1, std::llround(scaled)) * multiple;
  }
  // A spatial extent (or sequence length), scaled, at least `min_extent`.
  int64_t Spatial(int64_t s, int64_t min_extent = 1) const {
    const double scaled = static_cast<double>(s) * options_.spatial_scale;
    return std::max<int64_t>(min_extent, std::llround(scaled));
  }
  int64_t batch() const { return options_.batch; }

 private:
  const ZooOptions& options_;
};

using BlockFn = std::function<void(PipelineBuilder&, const Sizes&)>;

struct ZooEntry {
  const char* name;
  const char* what;
  BlockFn build;
};

// conv (no bias) -> folded batch norm, the unit of most CNN blocks.
std::string ConvBn(PipelineBuilder& b, const std::string& x, int64_t out, int64_t kernel,
                   int64_t stride, int64_t pad, int64_t groups = 1) {
  return b.BatchNorm(b.Conv2d(x, out, kernel, stride, pad, groups, /*dilation=*/1,
                              /*bias=*/false));
}

// ResNet-18/34 basic block with identity shortcut: two 3x3 conv-BN, ReLU, add, ReLU.
void ResNet18Basic(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(32);
  const int64_t hw = s.Spatial(24);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  std::string y = b.Relu(ConvBn(b, x, c, 3, 1, 1));
  y = ConvBn(b, y, c, 3, 1, 1);
  b.Output(b.Relu(b.Add(y, x)));
}

// ResNet-50 bottleneck with identity shortcut: 1x1 reduce, 3x3, 1x1 expand (x4).
void ResNet50Bottleneck(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(128, 4);
  const int64_t mid = c / 4;
  const int64_t hw = s.Spatial(28);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  std::string y = b.Relu(ConvBn(b, x, mid, 1, 1, 0));
  y = b.Relu(ConvBn(b, y, mid, 3, 1, 1));
  y = ConvBn(b, y, c, 1, 1, 0);
  b.Output(b.Relu(b.Add(y, x)));
}

// MobileNetV2 inverted residual, stride 1, expansion 6: 1x1 expand, ReLU6, 3x3
// depthwise, ReLU6, linear 1x1 projection, residual add.
void MobileNetV2InvertedResidual(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(32);
  const int64_t hidden = 6 * c;
  const int64_t hw = s.Spatial(32);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  std::string y = b.Relu6(ConvBn(b, x, hidden, 1, 1, 0));
  y = b.Relu6(b.BatchNorm(b.DepthwiseConv2d(y, 3, 1, 1)));
  y = ConvBn(b, y, c, 1, 1, 0);
  b.Output(b.Add(y, x));
}

// ShuffleNet v1 unit, stride 1, 3 groups: grouped 1x1, channel shuffle
// (reshape [N, g, C/g, H, W], transpose, reshape back), 3x3 depthwise, grouped 1x1,
// residual add, ReLU.
void ShuffleNetUnit(PipelineBuilder& b, const Sizes& s) {
  const int64_t groups = 3;
  const int64_t c = s.Channels(240, 4 * groups);
  const int64_t mid = c / 4;
  const int64_t hw = s.Spatial(28);
  const int64_t n = s.batch();
  const std::string x = b.Input("x", {n, c, hw, hw});
  std::string y = b.Relu(ConvBn(b, x, mid, 1, 1, 0, groups));
  y = b.Reshape(y, {n, groups, mid / groups, hw, hw});
  y = b.Transpose(y, {0, 2, 1, 3, 4});
  y = b.Reshape(y, {n, mid, hw, hw});
  y = b.BatchNorm(b.DepthwiseConv2d(y, 3, 1, 1));
  y = ConvBn(b, y, c, 1, 1, 0, groups);
  b.Output(b.Relu(b.Add(y, x)));
}

// SqueezeNet fire module (fire3 of SqueezeNet 1.0): 1x1 squeeze, then 1x1 and 3x3
// expands concatenated along channels; convs with bias and ReLU, no batch norm.
void SqueezeNetFire(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(128);
  const int64_t squeeze = s.Channels(16);
  const int64_t expand = s.Channels(64);
  const int64_t hw = s.Spatial(28);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  const std::string sq = b.Relu(b.Conv2d(x, squeeze, 1));
  const std::string e1 = b.Relu(b.Conv2d(sq, expand, 1));
  const std::string e3 = b.Relu(b.Conv2d(sq, expand, 3, 1, 1));
  b.Output(b.Concat({e1, e3}, 1));
}

// MnasNet-A1 stage-3 block, "MBConv3 (k5x5), SE": 1x1 expand (x3), BN, ReLU; 5x5
// depthwise, BN, ReLU; squeeze-and-excitation (global average pool, 1x1 reduce to a
// quarter of the block's input channels, ReLU, 1x1 expand, sigmoid, channel-wise
// scale); linear 1x1 projection, BN; identity residual.
void MnasNetBlock(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(40, 4);
  const int64_t hidden = 3 * c;
  const int64_t se = c / 4;
  const int64_t hw = s.Spatial(28);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  std::string y = b.Relu(ConvBn(b, x, hidden, 1, 1, 0));
  y = b.Relu(b.BatchNorm(b.DepthwiseConv2d(y, 5, 1, 2)));
  std::string g = b.GlobalAvgPool(y);
  g = b.Relu(b.Conv2d(g, se, 1));
  g = b.Sigmoid(b.Conv2d(g, hidden, 1));
  y = b.Mul(y, g);
  y = ConvBn(b, y, c, 1, 1, 0);
  b.Output(b.Add(y, x));
}

// GoogLeNet inception module (3a) at a quarter of its channels: 1x1; 1x1 -> 3x3;
// 1x1 -> 5x5; 3x3 max pool -> 1x1; the four branches concatenated.
void InceptionModule(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(48);
  const int64_t hw = s.Spatial(28);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  const std::string b1 = b.Relu(b.Conv2d(x, s.Channels(16), 1));
  std::string b2 = b.Relu(b.Conv2d(x, s.Channels(24), 1));
  b2 = b.Relu(b.Conv2d(b2, s.Channels(32), 3, 1, 1));
  std::string b3 = b.Relu(b.Conv2d(x, s.Channels(4), 1));
  b3 = b.Relu(b.Conv2d(b3, s.Channels(8), 5, 1, 2));
  std::string b4 = b.MaxPool2d(x, 3, 1, 1);
  b4 = b.Relu(b.Conv2d(b4, s.Channels(8), 1));
  b.Output(b.Concat({b1, b2, b3, b4}, 1));
}

// VGG block: two 3x3 convs with bias and ReLU, then 2x2 max pool, stride 2.
void VggBlock(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(32);
  const int64_t hw = s.Spatial(24, 2);
  const std::string x = b.Input("x", {s.batch(), c, hw, hw});
  std::string y = b.Relu(b.Conv2d(x, c, 3, 1, 1));
  y = b.Relu(b.Conv2d(y, c, 3, 1, 1));
  b.Output(b.MaxPool2d(y, 2, 2));
}

// AlexNet feature extractor at a quarter of its channels: 11x11/4 conv, 3x3/2 max
// pool, 5x5 conv, pool, three 3x3 convs, pool; convs with bias and ReLU.
void AlexNetConvStack(PipelineBuilder& b, const Sizes& s) {
  const int64_t hw = s.Spatial(127, 63);  // 63 is the least input the three pools allow
  const std::string x = b.Input("x", {s.batch(), 3, hw, hw});
  std::string y = b.Relu(b.Conv2d(x, s.Channels(16), 11, 4, 2));
  y = b.MaxPool2d(y, 3, 2);
  y = b.Relu(b.Conv2d(y, s.Channels(48), 5, 1, 2));
  y = b.MaxPool2d(y, 3, 2);
  y = b.Relu(b.Conv2d(y, s.Channels(96), 3, 1, 1));
  y = b.Relu(b.Conv2d(y, s.Channels(64), 3, 1, 1));
  y = b.Relu(b.Conv2d(y, s.Channels(64), 3, 1, 1));
  b.Output(b.MaxPool2d(y, 3, 2));
}

// Post-norm transformer encoder layer (BERT style): multi-head self-attention
// (Q/K/V projections, heads split by reshape + transpose, scaled dot products,
// softmax, heads merged, output projection), residual, layer norm; GELU MLP,
// residual, layer norm.
void TransformerEncoder(PipelineBuilder& b, const Sizes& s) {
  const int64_t heads = 4;
  const int64_t d = s.Channels(128, heads);
  const int64_t dh = d / heads;
  const int64_t ff = s.Channels(256);
  const int64_t len = s.Spatial(64);
  const int64_t n = s.batch();
  const std::string x = b.Input("x", {n, len, d});
  auto split_heads = [&](const std::string& t) {
    return b.Transpose(b.Reshape(t, {n, len, heads, dh}), {0, 2, 1, 3});
  };
  const std::string q = split_heads(b.Linear(x, d));
  const std::string k = split_heads(b.Linear(x, d));
  const std::string v = split_heads(b.Linear(x, d));
  std::string scores = b.MatMul(q, k, /*trans_a=*/false, /*trans_b=*/true);
  scores = b.UnaryWithParams(SCALE, scores, 1.0 / std::sqrt(static_cast<double>(dh)), 0.0);
  const std::string attn = b.Softmax(scores, 3);
  std::string ctx = b.MatMul(attn, v);
  ctx = b.Reshape(b.Transpose(ctx, {0, 2, 1, 3}), {n, len, d});
  std::string h = b.LayerNorm(b.Add(x, b.Linear(ctx, d)));
  const std::string mlp = b.Linear(b.Gelu(b.Linear(h, ff)), d);
  b.Output(b.LayerNorm(b.Add(h, mlp)));
}

// WaveNet residual block: dilated causal convolution (kernel 2, dilation 4) as left
// padding of the time axis plus an unpadded conv1d, separate filter and gate convs,
// tanh(filter) * sigmoid(gate), then a 1x1 conv to the residual (added to the input)
// and a 1x1 conv to the skip output. Two outputs: residual, skip.
void WaveNetResidual(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(32);
  const int64_t skip = s.Channels(64);
  const int64_t len = s.Spatial(2048);
  const int64_t dilation = 4;
  const std::string x = b.Input("x", {s.batch(), c, len});
  const std::string padded = b.Pad(x, {0, 0, dilation, 0, 0, 0});
  const std::string filter = b.Conv1d(padded, c, 2, 1, 0, 0, dilation);
  const std::string gate = b.Conv1d(padded, c, 2, 1, 0, 0, dilation);
  const std::string z = b.Mul(b.Tanh(filter), b.Sigmoid(gate));
  b.Output(b.Add(x, b.Conv1d(z, c, 1, 1, 0, 0, 1)));
  b.Output(b.Conv1d(z, skip, 1, 1, 0, 0, 1));
}

// 3D-ResNet (R3D-18) basic block: two 3x3x3 conv3d-BN, ReLU, identity residual, ReLU.
void ResNet3dBasic(PipelineBuilder& b, const Sizes& s) {
  const int64_t c = s.Channels(16);
  const int64_t t = s.Spatial(4);
  const int64_t hw = s.Spatial(14);
  const std::string x = b.Input("x", {s.batch(), c, t, hw, hw});
  std::string y = b.Relu(b.BatchNorm(b.Conv3d(x, c, 3, 1, 1, /*bias=*/false)));
  y = b.BatchNorm(b.Conv3d(y, c, 3, 1, 1, /*bias=*/false));
  b.Output(b.Relu(b.Add(y, x)));
}

const std::vector<ZooEntry>& Entries() {
  static const std::vector<ZooEntry> entries = {
      {"resnet18_basic",
       "ResNet-18 basic block (3x3 conv-BN-ReLU, 3x3 conv-BN, identity add, ReLU)", ResNet18Basic},
      {"resnet50_bottleneck",
       "ResNet-50 bottleneck (1x1 reduce, 3x3, 1x1 expand, BN, identity add, ReLU)",
       ResNet50Bottleneck},
      {"mobilenetv2_inverted_residual",
       "MobileNetV2 inverted residual (1x1 expand x6, 3x3 depthwise, ReLU6, linear 1x1, add)",
       MobileNetV2InvertedResidual},
      {"shufflenet_unit",
       "ShuffleNet v1 unit, g=3 (grouped 1x1, channel shuffle, 3x3 depthwise, grouped 1x1, add)",
       ShuffleNetUnit},
      {"squeezenet_fire", "SqueezeNet fire module (1x1 squeeze, 1x1 and 3x3 expands, concat)",
       SqueezeNetFire},
      {"mnasnet_block",
       "MnasNet-A1 MBConv3 5x5 block with squeeze-and-excitation and identity residual",
       MnasNetBlock},
      {"inception_module",
       "GoogLeNet inception module 3a at 1/4 channels (1x1, 3x3, 5x5, pool branches, concat)",
       InceptionModule},
      {"vgg_block", "VGG block (two 3x3 conv-ReLU, 2x2 max pool)", VggBlock},
      {"alexnet_conv_stack", "AlexNet conv stack at 1/4 channels (5 convs, 3 max pools)",
       AlexNetConvStack},
      {"transformer_encoder",
       "Transformer encoder layer (4-head self-attention, GELU MLP, post layer norm)",
       TransformerEncoder},
      {"wavenet_residual",
       "WaveNet residual block (causal dilated conv1d, tanh*sigmoid gate, residual + skip)",
       WaveNetResidual},
      {"resnet3d_basic", "3D-ResNet basic block (two 3x3x3 conv3d-BN, identity add, ReLU)",
       ResNet3dBasic},
  };
  return entries;
}

const ZooEntry* FindEntry(const std::string& name) {
  for (const ZooEntry& e : Entries()) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

std::string KnownNames() {
  std::string names;
  for (const ZooEntry& e : Entries()) {
    if (!names.empty()) names += ", ";
    names += e.name;
  }
  return names;
}

}  // namespace

std::vector<std::string> ZooNames() {
  std::vector<std::string> names;
  for (const ZooEntry& e : Entries()) names.push_back(e.name);
  return names;
}

std::string ZooDescription(const std::string& name) {
  const ZooEntry* entry = FindEntry(name);
  if (entry == nullptr) return "";
  std::ostringstream out;
  out << entry->what;
  StatusOr<PipelineSpec> spec = MakeZooBlock(name);
  if (spec.ok()) {
    out << "; default input";
    for (const TensorDecl& in : spec->inputs()) {
      out << " " << ShapeToString(Shape(in.shape().begin(), in.shape().end()));
    }
    out << ", " << spec->stages_size() << " stages";
  }
  return out.str();
}

StatusOr<PipelineSpec> MakeZooBlock(const std::string& name, const ZooOptions& options) {
  const ZooEntry* entry = FindEntry(name);
  if (entry == nullptr) {
    return Status::Error("unknown zoo block '" + name + "'; known blocks: " + KnownNames());
  }
  if (!(options.spatial_scale > 0) || !(options.channel_scale > 0) || options.spatial_scale > 64 ||
      options.channel_scale > 64) {
    return Status::Error("zoo block '" + name +
                         "': spatial_scale and channel_scale must be in (0, 64]");
  }
  if (options.batch < 1 || options.batch > 4096) {
    return Status::Error("zoo block '" + name + "': batch must be in [1, 4096], got " +
                         std::to_string(options.batch));
  }
  if (options.dtype != FLOAT32 && options.dtype != FLOAT64) {
    return Status::Error("zoo block '" + name + "': dtype must be FLOAT32 or FLOAT64");
  }
  PipelineBuilder builder(name, options.dtype, options.weight_seed);
  builder.set_math(options.math);
  builder.set_source(std::string("zoo:") + name);
  const Sizes sizes(options);
  entry->build(builder, sizes);
  StatusOr<PipelineSpec> spec = builder.Finish();
  if (!spec.ok()) return spec.status().WithContext("zoo block '" + name + "'");
  return spec;
}

}  // namespace schedfarm
