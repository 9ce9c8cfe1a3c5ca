// The TorchScript export of the Torch kinds (GCN, GraphSAGE, LANN, BiLSTM): one module
// holding its kind, its feature schema and every member's weights stacked (member
// first, then layer or direction) with the normalization statistics, and a forward
// written in TorchScript that repeats the C++ model's computation on raw features, from
// the normalization (and for the graph networks their messages) to the ensemble
// statistics.
#include <torch/script.h>
#include <torch/torch.h>

#include <exception>
#include <string>
#include <vector>

#include "learner/torch/bilstm.h"
#include "learner/torch/gcn.h"
#include "learner/torch/lann.h"
#include "learner/torch/sage.h"
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

// The messages of a batch's edges (rows of the batch) as the C++ models build them:
// self edges dropped, duplicates merged, self loops added if asked, and each target's
// messages weighted by 1 / their count (a row of rownorm(A) or rownorm(A + I)).
constexpr char kMessages[] = R"TS(
def messages(self, target: Tensor, source: Tensor, n: int,
             self_loops: bool) -> Tuple[Tensor, Tensor, Tensor]:
    distinct = source != target
    key, _ = torch.sort(target[distinct] * n + source[distinct])
    first = torch.cat([key[:1] == key[:1], key[1:] != key[:-1]])
    key = key[first]
    target = torch.div(key, n, rounding_mode='floor')
    source = torch.remainder(key, n)
    if self_loops:
        loops = torch.arange(n)
        target = torch.cat([target, loops])
        source = torch.cat([source, loops])
    count = torch.zeros(n).index_add(0, target, torch.ones(target.size(0)))
    weight = (1.0 / count)[target].unsqueeze(1)
    return target, source, weight

def propagate(self, x: Tensor, target: Tensor, source: Tensor, weight: Tensor) -> Tensor:
    return torch.zeros_like(x).index_add(0, target, x[source] * weight)
)TS";

constexpr char kGcnForward[] = R"TS(
def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor,
            flops: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
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
    target, source, weight = self.messages(target, source, n, True)
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
            h = self.propagate(h, target, source, weight)
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

// GraphSAGE: the mean messages of producers and of consumers (no self loops), each
// layer's output scaled to unit length, the mean, max and sum over each graph.
constexpr char kSageForward[] = R"TS(
def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor,
            flops: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    n = invariant.size(0)
    num_graphs = int(graph_index.max()) + 1
    inv, dep = self.normalize(invariant, dependent, scheduled)
    x = torch.cat([inv, dep], 1)
    p_target, p_source, p_weight = self.messages(edge_index[1], edge_index[0], n, False)
    c_target, c_source, c_weight = self.messages(edge_index[0], edge_index[1], n, False)
    stages = torch.zeros(num_graphs).index_add(0, graph_index, torch.ones(n)).unsqueeze(1)
    predictions = []
    for m in range(self.members):
        h = torch.relu(torch.addmm(self.embed_bias[m], x, self.embed_weight[m].t()))
        for l in range(self.layers):
            from_p = self.propagate(torch.relu(torch.mm(h, self.producers_weight[m][l].t())),
                                    p_target, p_source, p_weight)
            from_c = self.propagate(torch.relu(torch.mm(h, self.consumers_weight[m][l].t())),
                                    c_target, c_source, c_weight)
            h = torch.relu(torch.mm(torch.cat([h, from_p, from_c], 1),
                                    self.combine_weight[m][l].t()))
            h = h / torch.clamp_min(torch.sqrt((h * h).sum(1, keepdim=True)), 1e-12)
        h = torch.relu(torch.mm(torch.relu(torch.mm(h, self.node_first_weight[m].t())),
                                self.node_second_weight[m].t()))
        total = torch.zeros(num_graphs, h.size(1)).index_add(0, graph_index, h)
        largest = torch.stack([h[graph_index == g].amax(0) for g in range(num_graphs)])
        out = torch.addmm(self.readout_bias[m], torch.cat([total / stages, largest, total], 1),
                          self.readout_weight[m].t()).squeeze(1)
        predictions.append(torch.exp(torch.clamp(out, -self.max_log_runtime,
                                                 self.max_log_runtime)) * self.time_scale)
    p = torch.stack(predictions, 0)
    return p.mean(0), p.std(0, unbiased=False)
)TS";

// LANN: per graph the column sums of the raw features and the analytic operation
// count (`flops`, required), signed-log1p'd and z-scored, through the two layers.
constexpr char kLannForward[] = R"TS(
def forward(self, invariant: Tensor, dependent: Tensor, scheduled: Tensor,
            edge_index: Tensor, graph_index: Tensor,
            flops: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    assert flops is not None, "LANN reads the analytic operation count: pass flops [G]"
    num_graphs = int(graph_index.max()) + 1
    rows = torch.cat([invariant.double(), dependent.double()], 1)
    sums = rows.new_zeros([num_graphs, rows.size(1)]).index_add(0, graph_index, rows)
    raw = torch.cat([sums, flops.double().unsqueeze(1)], 1)
    x = (torch.sign(raw) * torch.log1p(torch.abs(raw))).float()
    x = (x - self.input_mean) / self.input_std
    predictions = []
    for m in range(self.members):
        z = torch.relu(torch.addmm(self.hidden_bias[m], x, self.hidden_weight[m].t()))
        out = torch.addmm(self.output_bias[m], z, self.output_weight[m].t()).squeeze(1)
        log_seconds = out.double() * self.log_std + self.log_mean
        predictions.append(torch.exp(torch.clamp(log_seconds, -self.max_log_seconds,
                                                 self.max_log_seconds)))
    p = torch.stack(predictions, 0)
    return p.mean(0).float(), p.std(0, unbiased=False).float()
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
            edge_index: Tensor, graph_index: Tensor,
            flops: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
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
template <typename Net>
torch::Tensor StackLayers(const std::vector<Net>& members, int layers, const std::string& prefix,
                          const std::string& kind, const std::vector<int64_t>& shape) {
  std::vector<torch::Tensor> per_member;
  for (const Net& net : members) {
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

// Every module's description of itself: its kind and the feature schema it reads.
void AddSchema(const torch_models::TorchEnsembleModel& model, torch::jit::Module& module) {
  const FeatureSchema& schema = model.schema();
  module.register_attribute("kind", c10::StringType::get(), model.kind());
  module.register_attribute("feature_schema_version", c10::IntType::get(),
                            static_cast<int64_t>(schema.version));
  for (const auto& [name, names] : {std::pair{"invariant_names", &schema.invariant_names},
                                    std::pair{"dependent_names", &schema.dependent_names}}) {
    c10::List<std::string> list;
    for (const std::string& n : *names) list.push_back(n);
    module.register_attribute(name, c10::ListType::ofStrings(), list);
  }
}

// The attributes and buffers of the stage-level networks: members, time scale, clamp of
// the output, normalization statistics.
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
  module.define(std::string(kNormalize) + kMessages + kGcnForward);
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

void DefineSage(const torch_models::SageModel& sage, torch::jit::Module& module) {
  const auto& members = sage.members();
  const int layers = sage.options().layers;
  const int64_t hidden = sage.options().hidden;
  AddCommon(members.size(), sage.time_scale(), sage.stats(), module);
  module.register_attribute("layers", c10::IntType::get(), static_cast<int64_t>(layers));
  module.register_attribute("max_log_runtime", c10::FloatType::get(),
                            torch_models::kMaxSageLogRuntime);
  for (const char* name : {"embed", "readout"}) {
    module.register_buffer(std::string(name) + "_weight",
                           StackMembers(members, {std::string(name) + ".weight"}));
    module.register_buffer(std::string(name) + "_bias",
                           StackMembers(members, {std::string(name) + ".bias"}));
  }
  for (const char* name : {"node_first", "node_second"}) {
    module.register_buffer(std::string(name) + "_weight",
                           StackMembers(members, {std::string(name) + ".weight"}));
  }
  module.register_buffer("producers_weight",
                         StackLayers(members, layers, "producers", "weight", {hidden, hidden}));
  module.register_buffer("consumers_weight",
                         StackLayers(members, layers, "consumers", "weight", {hidden, hidden}));
  module.register_buffer("combine_weight",
                         StackLayers(members, layers, "combine", "weight", {hidden, 3 * hidden}));
  module.define(std::string(kNormalize) + kMessages + kSageForward);
}

void DefineLann(const torch_models::LannModel& lann, torch::jit::Module& module) {
  const auto& members = lann.members();
  module.register_attribute("members", c10::IntType::get(), static_cast<int64_t>(members.size()));
  module.register_attribute("log_mean", c10::FloatType::get(), lann.log_mean());
  module.register_attribute("log_std", c10::FloatType::get(), lann.log_stddev());
  module.register_attribute("max_log_seconds", c10::FloatType::get(),
                            torch_models::kMaxLannLogSeconds);
  module.register_buffer("input_mean", lann.input_stats().mean.clone());
  module.register_buffer("input_std", lann.input_stats().stddev.clone());
  for (const char* name : {"hidden", "output"}) {
    module.register_buffer(std::string(name) + "_weight",
                           StackMembers(members, {std::string(name) + ".weight"}));
    module.register_buffer(std::string(name) + "_bias",
                           StackMembers(members, {std::string(name) + ".bias"}));
  }
  module.define(kLannForward);
}

}  // namespace

Status ExportTorchScript(const PerformanceModel& model, const std::string& path) {
  const auto* ensemble = dynamic_cast<const torch_models::TorchEnsembleModel*>(&model);
  if (ensemble == nullptr) {
    return Status::Error("TorchScript export: a '" + model.kind() +
                         "' model has no TorchScript export (the Torch kinds have: gcn, "
                         "gcn-rank, gcn0, sage, lann, bilstm)");
  }
  if (!ensemble->trained()) return Status::Error("TorchScript export: the model is not trained");
  try {
    torch::jit::Module module("Schedfarm_" + model.kind());
    AddSchema(*ensemble, module);
    if (const auto* gcn = dynamic_cast<const torch_models::GcnModel*>(&model)) {
      DefineGcn(*gcn, module);
    } else if (const auto* sage = dynamic_cast<const torch_models::SageModel*>(&model)) {
      DefineSage(*sage, module);
    } else if (const auto* lann = dynamic_cast<const torch_models::LannModel*>(&model)) {
      DefineLann(*lann, module);
    } else {
      DefineBilstm(dynamic_cast<const torch_models::BilstmModel&>(model), module);
    }
    module.save(path);
  } catch (const c10::Error& e) {
    return Status::Error("TorchScript export to '" + path +
                         "': Torch error: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Error("TorchScript export to '" + path + "': " + e.what());
  }
  return Status::Ok();
}

}  // namespace schedfarm
