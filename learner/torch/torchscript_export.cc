// The TorchScript export of the GCN and the BiLSTM: one module holding every member's
// weights stacked (member first, then layer or direction) with the normalization
// statistics, and a forward written in TorchScript that repeats the C++ model's
// computation on raw features, from the normalization (and for the GCN the rows of
// rownorm(A + I)) to the clamped ensemble statistics.
#include <torch/script.h>
#include <torch/torch.h>

#include <exception>
#include <string>
#include <vector>

#include "learner/torch/bilstm.h"
#include "learner/torch/gcn.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {
namespace {

// Both modules' normalization of raw features: signed log1p, z-scores with the
// training statistics, and the dependent rows zeroed for undecided stages with the
// scheduled flag appended.
constexpr char kNormalize[] = R"TS(
def normalize(self, invariant: Tensor, dependent: Tensor,
              scheduled: Tensor) -> Tuple[Tensor, Tensor]:
    inv = invariant.float()
    inv = (torch.sign(inv) * torch.log1p(torch.abs(inv)) - self.invariant_mean) / self.invariant_std
    dep = dependent.float()
    dep = (torch.sign(dep) * torch.log1p(torch.abs(dep)) - self.dependent_mean) / self.dependent_std
    s = (scheduled > 0).float().unsqueeze(1)
    return inv, torch.cat([dep * s, s], 1)
)TS";

constexpr char kGcnForward[] = R"TS(
def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor) -> Tuple[Tensor, Tensor]:
    n = invariant.size(0)
    num_graphs = int(graph_index.max()) + 1
    inv, dep = self.normalize(invariant, dependent, scheduled)
    producer = edge_index[0]
    consumer = edge_index[1]
    if self.edges == 0:
        target = torch.cat([consumer, producer])
        source = torch.cat([producer, consumer])
    elif self.edges == 1:
        target = consumer
        source = producer
    else:
        target = producer
        source = consumer
    distinct = source != target
    key, _ = torch.sort(target[distinct] * n + source[distinct])
    first = torch.cat([key[:1] == key[:1], key[1:] != key[:-1]])
    key = key[first]
    loops = torch.arange(n)
    target = torch.cat([torch.div(key, n, rounding_mode='floor'), loops])
    source = torch.cat([torch.remainder(key, n), loops])
    count = torch.zeros(n).index_add(0, target, torch.ones(target.size(0)))
    weight = (1.0 / count)[target].unsqueeze(1)
    predictions = []
    for m in range(self.members):
        e_inv = torch.addmm(self.embed_invariant_bias[m], inv,
                            self.embed_invariant_weight[m].t())
        e_dep = torch.addmm(self.embed_dependent_bias[m], dep,
                            self.embed_dependent_weight[m].t())
        e = torch.relu(torch.cat([e_inv, e_dep], 1))
        pooled = [torch.zeros(num_graphs, e.size(1)).index_add(0, graph_index, e)]
        for l in range(self.layers):
            h = torch.addmm(self.conv_bias[m][l], e, self.conv_weight[m][l].t())
            h = torch.zeros_like(h).index_add(0, target, h[source] * weight)
            h = torch.batch_norm(h, self.norm_weight[m][l], self.norm_bias[m][l],
                                 self.norm_mean[m][l], self.norm_var[m][l], False, 0.0,
                                 self.norm_eps, False)
            e = torch.relu(h)
            pooled.append(torch.zeros(num_graphs, e.size(1)).index_add(0, graph_index, e))
        out = torch.addmm(self.readout_bias[m], torch.cat(pooled, 1), self.readout_weight[m].t())
        runtime = torch.softplus(torch.clamp_min(out.squeeze(1), self.min_output), 1.0, 20.0)
        predictions.append(runtime * self.time_scale)
    p = torch.stack(predictions, 0)
    return p.mean(0), p.std(0, unbiased=False)
)TS";

// The BiLSTM, one schedule at a time, the LSTM written out (gates in PyTorch's order:
// input, forget, cell, output).
constexpr char kBilstmForward[] = R"TS(
def direction(self, e: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor, b_hh: Tensor,
              reverse: bool) -> Tensor:
    steps = e.size(0)
    hidden = w_hh.size(1)
    gates_in = torch.addmm(b_ih + b_hh, e, w_ih.t())
    h = torch.zeros(hidden)
    c = torch.zeros(hidden)
    out = torch.zeros(steps, hidden)
    for step in range(steps):
        t = steps - 1 - step if reverse else step
        gates = gates_in[t] + torch.mv(w_hh, h)
        parts = gates.chunk(4)
        c = torch.sigmoid(parts[1]) * c + torch.sigmoid(parts[0]) * torch.tanh(parts[2])
        h = torch.sigmoid(parts[3]) * torch.tanh(c)
        out[t] = h
    return out

def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor) -> Tuple[Tensor, Tensor]:
    num_graphs = int(graph_index.max()) + 1
    inv, dep = self.normalize(invariant, dependent, scheduled)
    x = torch.cat([inv, dep], 1)
    predictions = []
    for m in range(self.members):
        outputs = []
        for g in range(num_graphs):
            rows = x[graph_index == g]
            e = torch.relu(torch.addmm(self.embed_bias[m], rows, self.embed_weight[m].t()))
            forward_h = self.direction(e, self.w_ih[m][0], self.w_hh[m][0], self.b_ih[m][0],
                                       self.b_hh[m][0], False)
            backward_h = self.direction(e, self.w_ih[m][1], self.w_hh[m][1], self.b_ih[m][1],
                                        self.b_hh[m][1], True)
            h = torch.cat([forward_h, backward_h], 1)
            z = torch.relu(torch.addmm(self.latent_bias[m], h * e, self.latent_weight[m].t()))
            outputs.append(torch.addmm(self.readout_bias[m], z.sum(0, keepdim=True),
                                       self.readout_weight[m].t()).squeeze(1))
        out = torch.cat(outputs)
        runtime = torch.softplus(torch.clamp_min(out, self.min_output), 1.0, 20.0)
        predictions.append(runtime * self.time_scale)
    p = torch.stack(predictions, 0)
    return p.mean(0), p.std(0, unbiased=False)
)TS";

// A parameter or buffer of the network by its name ("readout.weight").
torch::Tensor Named(const torch::nn::Module& net, const std::string& name) {
  const auto parameters = net.named_parameters(/*recurse=*/true);
  if (const torch::Tensor* parameter = parameters.find(name)) return parameter->detach().clone();
  return net.named_buffers(/*recurse=*/true)[name].detach().clone();
}

// Named tensors of every member, stacked: [members, ...shape] for one name,
// [members, names, ...shape] for several.
template <typename Net>
torch::Tensor StackMembers(const std::vector<Net>& members, const std::vector<std::string>& names) {
  std::vector<torch::Tensor> per_member;
  for (const Net& net : members) {
    std::vector<torch::Tensor> per_name;
    for (const std::string& name : names) per_name.push_back(Named(*net, name));
    per_member.push_back(names.size() == 1 ? per_name[0] : torch::stack(per_name, 0));
  }
  return torch::stack(per_member, 0);
}

// Per layer `kind` ("weight", "bias", "running_mean"...) of module `prefix<l>`, stacked
// over layers then members: [members, layers, ...shape].
torch::Tensor StackLayers(const std::vector<torch_models::GcnNet>& members, int layers,
                          const std::string& prefix, const std::string& kind,
                          const std::vector<int64_t>& shape) {
  std::vector<torch::Tensor> per_member;
  for (const torch_models::GcnNet& net : members) {
    std::vector<torch::Tensor> per_layer;
    for (int l = 0; l < layers; ++l) {
      per_layer.push_back(Named(*net, prefix + std::to_string(l) + "." + kind));
    }
    std::vector<int64_t> empty_shape = {0};
    empty_shape.insert(empty_shape.end(), shape.begin(), shape.end());
    per_member.push_back(layers > 0 ? torch::stack(per_layer, 0) : torch::empty(empty_shape));
  }
  return torch::stack(per_member, 0);
}

// The attributes and buffers both modules have: members, time scale, clamp of the
// output, normalization statistics.
void AddCommon(int64_t members, double time_scale, const torch_models::StageStats& stats,
               torch::jit::Module& module) {
  module.register_attribute("members", c10::IntType::get(), members);
  module.register_attribute("time_scale", c10::FloatType::get(), time_scale);
  module.register_attribute("min_output", c10::FloatType::get(), torch_models::kMinOutput);
  module.register_buffer("invariant_mean", stats.invariant.mean.clone());
  module.register_buffer("invariant_std", stats.invariant.stddev.clone());
  module.register_buffer("dependent_mean", stats.dependent.mean.clone());
  module.register_buffer("dependent_std", stats.dependent.stddev.clone());
}

void DefineGcn(const torch_models::GcnModel& gcn, torch::jit::Module& module) {
  const auto& members = gcn.members();
  const int layers = gcn.options().layers;
  const int64_t width = torch_models::kNodeWidth;
  AddCommon(members.size(), gcn.time_scale(), gcn.stats(), module);
  module.register_attribute("layers", c10::IntType::get(), static_cast<int64_t>(layers));
  module.register_attribute("edges", c10::IntType::get(),
                            static_cast<int64_t>(gcn.options().edges));
  module.register_attribute("norm_eps", c10::FloatType::get(), torch_models::kBatchNormEps);
  for (const char* name : {"embed_invariant", "embed_dependent", "readout"}) {
    module.register_buffer(std::string(name) + "_weight",
                           StackMembers(members, {std::string(name) + ".weight"}));
    module.register_buffer(std::string(name) + "_bias",
                           StackMembers(members, {std::string(name) + ".bias"}));
  }
  module.register_buffer("conv_weight",
                         StackLayers(members, layers, "conv", "weight", {width, width}));
  module.register_buffer("conv_bias", StackLayers(members, layers, "conv", "bias", {width}));
  module.register_buffer("norm_weight", StackLayers(members, layers, "norm", "weight", {width}));
  module.register_buffer("norm_bias", StackLayers(members, layers, "norm", "bias", {width}));
  module.register_buffer("norm_mean",
                         StackLayers(members, layers, "norm", "running_mean", {width}));
  module.register_buffer("norm_var", StackLayers(members, layers, "norm", "running_var", {width}));
  module.define(std::string(kNormalize) + kGcnForward);
}

void DefineBilstm(const torch_models::BilstmModel& bilstm, torch::jit::Module& module) {
  const auto& members = bilstm.members();
  AddCommon(members.size(), bilstm.time_scale(), bilstm.stats(), module);
  for (const char* name : {"embed", "readout"}) {
    module.register_buffer(std::string(name) + "_weight",
                           StackMembers(members, {std::string(name) + ".weight"}));
    module.register_buffer(std::string(name) + "_bias",
                           StackMembers(members, {std::string(name) + ".bias"}));
  }
  module.register_buffer("latent_weight", StackMembers(members, {"to_latent.weight"}));
  module.register_buffer("latent_bias", StackMembers(members, {"to_latent.bias"}));
  // [members, direction (forward, backward), ...]
  for (const auto& [buffer, parameter] :
       {std::pair{"w_ih", "weight_ih"}, std::pair{"w_hh", "weight_hh"},
        std::pair{"b_ih", "bias_ih"}, std::pair{"b_hh", "bias_hh"}}) {
    const std::string forward = std::string("lstm.") + parameter + "_l0";
    module.register_buffer(buffer, StackMembers(members, {forward, forward + "_reverse"}));
  }
  module.define(std::string(kNormalize) + kBilstmForward);
}

}  // namespace

Status ExportTorchScript(const PerformanceModel& model, const std::string& path) {
  const auto* gcn = dynamic_cast<const torch_models::GcnModel*>(&model);
  const auto* bilstm = dynamic_cast<const torch_models::BilstmModel*>(&model);
  if (gcn == nullptr && bilstm == nullptr) {
    return Status::Error("ExportTorchScript: a '" + model.kind() +
                         "' model has no TorchScript export (gcn, gcn-rank, gcn0 and bilstm have)");
  }
  if (gcn != nullptr ? !gcn->trained() : !bilstm->trained()) {
    return Status::Error("ExportTorchScript: the model is not trained");
  }
  try {
    torch::jit::Module module(gcn != nullptr ? "SchedfarmGcn" : "SchedfarmBilstm");
    if (gcn != nullptr) {
      DefineGcn(*gcn, module);
    } else {
      DefineBilstm(*bilstm, module);
    }
    module.save(path);
  } catch (const c10::Error& e) {
    return Status::Error("ExportTorchScript to '" + path +
                         "': Torch error: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Error("ExportTorchScript to '" + path + "': " + e.what());
  }
  return Status::Ok();
}

}  // namespace schedfarm
