// The TorchScript export of the GCN: one module holding every member's weights stacked
// (member first, then layer) with the normalization statistics, and a forward written
// in TorchScript that repeats the C++ model's computation on raw features, from the
// normalization and the rows of rownorm(A + I) to the clamped ensemble statistics.
#include <torch/script.h>
#include <torch/torch.h>

#include <exception>
#include <string>
#include <vector>

#include "learner/torch/gcn.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {
namespace {

constexpr char kForward[] = R"TS(
def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor) -> Tuple[Tensor, Tensor]:
    n = invariant.size(0)
    num_graphs = int(graph_index.max()) + 1
    inv = invariant.float()
    inv = (torch.sign(inv) * torch.log1p(torch.abs(inv)) - self.invariant_mean) / self.invariant_std
    dep = dependent.float()
    dep = (torch.sign(dep) * torch.log1p(torch.abs(dep)) - self.dependent_mean) / self.dependent_std
    s = (scheduled > 0).float().unsqueeze(1)
    dep = torch.cat([dep * s, s], 1)
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

// A parameter or buffer of the network by its name ("readout.weight").
torch::Tensor Named(const torch_models::GcnNet& net, const std::string& name) {
  const auto parameters = net->named_parameters(/*recurse=*/true);
  if (const torch::Tensor* parameter = parameters.find(name)) return parameter->detach().clone();
  return net->named_buffers(/*recurse=*/true)[name].detach().clone();
}

// One named tensor of every member, stacked: [members, ...shape].
torch::Tensor StackMembers(const std::vector<torch_models::GcnNet>& members,
                           const std::string& name) {
  std::vector<torch::Tensor> per_member;
  for (const torch_models::GcnNet& net : members) per_member.push_back(Named(net, name));
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
      per_layer.push_back(Named(net, prefix + std::to_string(l) + "." + kind));
    }
    std::vector<int64_t> empty_shape = {0};
    empty_shape.insert(empty_shape.end(), shape.begin(), shape.end());
    per_member.push_back(layers > 0 ? torch::stack(per_layer, 0) : torch::empty(empty_shape));
  }
  return torch::stack(per_member, 0);
}

}  // namespace

Status ExportGcnTorchScript(const PerformanceModel& model, const std::string& path) {
  const auto* gcn = dynamic_cast<const torch_models::GcnModel*>(&model);
  if (gcn == nullptr) {
    return Status::Error("ExportGcnTorchScript: a '" + model.kind() +
                         "' model has no TorchScript export (gcn and gcn0 have)");
  }
  if (!gcn->trained()) return Status::Error("ExportGcnTorchScript: the model is not trained");
  try {
    const auto& members = gcn->members();
    const int layers = gcn->options().layers;
    const int64_t width = torch_models::kNodeWidth;
    torch::jit::Module module("SchedfarmGcn");
    module.register_attribute("members", c10::IntType::get(), static_cast<int64_t>(members.size()));
    module.register_attribute("layers", c10::IntType::get(), static_cast<int64_t>(layers));
    module.register_attribute("edges", c10::IntType::get(),
                              static_cast<int64_t>(gcn->options().edges));
    module.register_attribute("time_scale", c10::FloatType::get(), gcn->time_scale());
    module.register_attribute("min_output", c10::FloatType::get(), torch_models::kGcnMinOutput);
    module.register_attribute("norm_eps", c10::FloatType::get(), torch_models::kBatchNormEps);
    module.register_buffer("invariant_mean", gcn->invariant_stats().mean.clone());
    module.register_buffer("invariant_std", gcn->invariant_stats().stddev.clone());
    module.register_buffer("dependent_mean", gcn->dependent_stats().mean.clone());
    module.register_buffer("dependent_std", gcn->dependent_stats().stddev.clone());
    for (const char* name : {"embed_invariant", "embed_dependent", "readout"}) {
      module.register_buffer(std::string(name) + "_weight",
                             StackMembers(members, std::string(name) + ".weight"));
      module.register_buffer(std::string(name) + "_bias",
                             StackMembers(members, std::string(name) + ".bias"));
    }
    module.register_buffer("conv_weight",
                           StackLayers(members, layers, "conv", "weight", {width, width}));
    module.register_buffer("conv_bias", StackLayers(members, layers, "conv", "bias", {width}));
    module.register_buffer("norm_weight", StackLayers(members, layers, "norm", "weight", {width}));
    module.register_buffer("norm_bias", StackLayers(members, layers, "norm", "bias", {width}));
    module.register_buffer("norm_mean",
                           StackLayers(members, layers, "norm", "running_mean", {width}));
    module.register_buffer("norm_var",
                           StackLayers(members, layers, "norm", "running_var", {width}));
    module.define(kForward);
    module.save(path);
  } catch (const c10::Error& e) {
    return Status::Error("ExportGcnTorchScript to '" + path +
                         "': Torch error: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Error("ExportGcnTorchScript to '" + path + "': " + e.what());
  }
  return Status::Ok();
}

}  // namespace schedfarm
