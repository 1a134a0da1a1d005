// The learned model's LibTorch implementation: the plugin dpro_learned_torch (a MODULE library,
// learned_backend.h), the only translation unit of dpro that includes LibTorch.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <numeric>
#include <random>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/output_file.h"
#include "costmodel/kernel_time.h"
#include "costmodel/learned_backend.h"
#include "costmodel/learned_model.h"
#include "costmodel/model_file.h"

// OpenBLAS's report of the kernel family it chose (blas_tuning.h); weak: null when LibTorch's
// BLAS is not OpenBLAS. Resolved in the plugin's own scope, where LibTorch's BLAS is.
extern "C" char* openblas_get_corename(void) __attribute__((weak));

namespace dpro::costmodel {

namespace {

struct Architecture {
  int token_hidden = 64;
  int head_hidden = 128;
};

struct NetImpl : torch::nn::Module {
  explicit NetImpl(const Architecture& a)
      : tok1(register_module("tok1", torch::nn::Linear(kTokenFeatures, a.token_hidden))),
        tok2(register_module("tok2", torch::nn::Linear(a.token_hidden, a.token_hidden))),
        head1(register_module("head1", torch::nn::Linear(2 * a.token_hidden + kGlobalFeatures + 2, a.head_hidden))),
        head2(register_module("head2", torch::nn::Linear(a.head_hidden, a.head_hidden))),
        out(register_module("out", torch::nn::Linear(a.head_hidden, 1))) {
    g_mean = register_buffer("g_mean", torch::zeros({kGlobalFeatures}));
    g_std = register_buffer("g_std", torch::ones({kGlobalFeatures}));
  }
  // tokens [N,T,F], mask [N,T,1] (1 for real tokens), global [N,G] raw, known [N,1] (1 where
  // the device-identity features may be used), kernel [N,1] (1 where the kernel features
  // may be used) -> [N] log(latency / baseline).
  torch::Tensor forward(const torch::Tensor& tokens, const torch::Tensor& mask, const torch::Tensor& global,
                        const torch::Tensor& known, const torch::Tensor& kernel) {
    auto h = torch::relu(tok2(torch::relu(tok1(tokens)))) * mask;
    auto count = mask.sum(1).clamp_min(1.0);
    auto pooled = torch::cat({h.sum(1) / count, torch::amax(h, {1})}, 1);
    auto g = (global - g_mean) / g_std;
    auto relative = g.narrow(1, 0, kRelativeFeatures);
    auto kernel_part = g.narrow(1, kRelativeFeatures, kKernelFeatures) * kernel;
    auto identity = g.narrow(1, kRelativeFeatures + kKernelFeatures, kDeviceIdentityFeatures) * known;
    auto z = torch::relu(
        head2(torch::relu(head1(torch::cat({pooled, relative, kernel_part, kernel, identity, known}, 1)))));
    return out(z).squeeze(1);
  }
  torch::nn::Linear tok1, tok2, head1, head2, out;
  torch::Tensor g_mean, g_std;
};
TORCH_MODULE(Net);

// Feature rows packed into tensors, T = the largest token count among them.
struct Batch {
  torch::Tensor tokens, mask, global, known, kernel, log_baseline;
};

Batch pack(const std::vector<const FeatureRow*>& rows) {
  int t = 1;
  for (const auto* r : rows) t = std::max(t, r->token_count);
  const auto n = static_cast<std::int64_t>(rows.size());
  Batch b;
  b.tokens = torch::zeros({n, t, kTokenFeatures});
  b.mask = torch::zeros({n, t, 1});
  b.global = torch::empty({n, kGlobalFeatures});
  b.known = torch::empty({n, 1});
  b.kernel = torch::empty({n, 1});
  b.log_baseline = torch::empty({n}, torch::kFloat64);
  float* known = b.known.data_ptr<float>();
  float* kernel = b.kernel.data_ptr<float>();
  float* tok = b.tokens.data_ptr<float>();
  float* mask = b.mask.data_ptr<float>();
  float* glob = b.global.data_ptr<float>();
  double* lr = b.log_baseline.data_ptr<double>();
  for (std::int64_t i = 0; i < n; ++i) {
    const FeatureRow& r = *rows[i];
    std::copy(r.tokens, r.tokens + r.token_count * kTokenFeatures, tok + i * t * kTokenFeatures);
    std::fill(mask + i * t, mask + i * t + r.token_count, 1.0f);
    std::copy(r.global, r.global + kGlobalFeatures, glob + i * kGlobalFeatures);
    lr[i] = std::log(r.baseline_ms);
    known[i] = r.device_known;
    kernel[i] = r.kernel_known;
  }
  return b;
}

std::vector<FeatureRow> features_of(const std::vector<const Measurement*>& data) {
  std::vector<FeatureRow> rows(data.size());
  for (size_t i = 0; i < data.size(); ++i)
    if (!make_features(data[i]->op, *data[i]->device, rows[i]))
      throw InputError("", "op '" + data[i]->op.name + "'", "cannot be described as a compact AST");
  for (auto& r : rows) r.device_known = 1;
  return rows;
}

// The LibTorch archive of a network's weights, as bytes.
std::string serialise_net(Net net) {
  std::ostringstream stream;
  torch::serialize::OutputArchive archive;
  net->save(archive);
  archive.save_to(stream);
  return stream.str();
}

// Milliseconds for feature rows through one network.
std::vector<double> run_net(Net net, const std::vector<const FeatureRow*>& rows) {
  // Batches of rows with similar token counts: little padding in each packed batch.
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a]->token_count < rows[b]->token_count; });
  std::vector<double> out(rows.size());
  constexpr std::size_t kBatch = 2048;
  c10::InferenceMode guard;
  for (std::size_t s = 0; s < order.size(); s += kBatch) {
    const std::size_t e = std::min(order.size(), s + kBatch);
    std::vector<const FeatureRow*> part;
    for (std::size_t i = s; i < e; ++i) part.push_back(rows[order[i]]);
    Batch b = pack(part);
    auto pred = net->forward(b.tokens, b.mask, b.global, b.known, b.kernel).to(torch::kFloat64);
    auto ms = (pred + b.log_baseline).exp();
    const double* p = ms.data_ptr<double>();
    for (std::size_t i = s; i < e; ++i) out[order[i]] = p[i - s];
  }
  return out;
}

// The state of one model (LearnedModel's, through learned::ModelBackend).
class TorchModel final : public learned::ModelBackend {
 public:
  Architecture arch;
  Net net{nullptr};
  // The network for GPUs the model was not trained on (rows with device_known == 0), trained
  // with fewer epochs (TrainOptions::unseen_epochs); null: `net` serves them too.
  Net unseen_net{nullptr};
  std::string provenance_text;
  std::set<std::string> known_devices;  // canonical names of the GPUs trained on
  // Their datasheet inputs (device_features): a GPU whose inputs equal one of them (the A100
  // SXM4 40 GB and the A100 PCIe 40 GB) is priced as that GPU, by the network trained on them.
  std::map<std::string, std::vector<float>> known_features;
  // Floor guard for GPUs outside the data: per op family the fastest latency measured on any
  // training GPU (the elementwise families' floor, 25-31 us; no GPU in the data went lower); a
  // GPU outside the data is priced no lower. Lowered by samples of an adapted GPU (fine_tune).
  std::map<OpFamily, double> floors_ms;
  // Per GPU of the training data, the host overhead its measured latencies carry
  // (kernel_time.h); empty in files written before it (kernel ratios are then latency ratios).
  std::map<std::string, double> overhead_ms;
  // Residual memories of the training configurations (config_memory.h): of `net` for
  // predictions that use a recorded kernel and for those that do not, and of `unseen_net`.
  ConfigMemory memory_kernel, memory_plain, memory_unseen;

  bool has_unseen() const { return static_cast<bool>(unseen_net); }
  Net& net_for(bool device_known) { return device_known || !has_unseen() ? net : unseen_net; }
  const ConfigMemory& memory_for(bool device_known, bool kernel_used) const {
    if (!device_known && has_unseen()) return memory_unseen;
    return kernel_used ? memory_kernel : memory_plain;
  }
  DevicePricing pricing_of(const DeviceSpec& d) const override {
    return device_pricing(known_devices, known_features, d);
  }
  double floor_ms(OpFamily family) const {
    const auto it = floors_ms.find(family);
    return it == floors_ms.end() ? 0.0 : it->second;
  }
  double overhead_of(const DeviceSpec& d, bool allow_identity) const {
    if (allow_identity) {
      const auto it = overhead_ms.find(pricing_of(d).as);
      if (it != overhead_ms.end()) return it->second;
    }
    return typical_overhead_ms(overhead_ms);
  }

  std::string provenance() const override { return provenance_text; }
  void set_provenance(std::string text) override { provenance_text = std::move(text); }
  double unseen_floor_ms(OpFamily family) const override { return floor_ms(family); }
  double measurement_overhead_ms(const DeviceSpec& device, bool allow_identity) const override {
    return overhead_of(device, allow_identity);
  }
  void fine_tune(const std::vector<const Measurement*>& target, const std::vector<const Measurement*>& replay,
                 const FewShotOptions& options, Logger& log) override;
  std::string serialise() const override;
  std::vector<double> predict_queries(const std::vector<PredictQuery>& queries) const override;
  std::vector<double> predict_rows(const FeatureRow* rows, std::size_t count) const override;
};

// Runs `epochs` of Adam over (rows, targets) with a cosine learning-rate decay.
double fit(Net& net, const std::vector<const FeatureRow*>& rows, const std::vector<float>& targets,
           const std::vector<float>& weights, int epochs, int batch_size, double lr, std::uint64_t seed,
           Logger& log) {
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(lr));
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), 0);
  const std::size_t steps_per_epoch = (rows.size() + batch_size - 1) / batch_size;
  const double total_steps = static_cast<double>(steps_per_epoch) * epochs;
  std::size_t step = 0;
  double last = 0;
  const auto start = std::chrono::steady_clock::now();
  net->train();
  for (int epoch = 0; epoch < epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    double sum = 0;
    for (std::size_t s = 0; s < rows.size(); s += batch_size) {
      const std::size_t e = std::min(rows.size(), s + batch_size);
      std::vector<const FeatureRow*> part;
      std::vector<float> y, w;
      for (std::size_t i = s; i < e; ++i) {
        part.push_back(rows[order[i]]);
        y.push_back(targets[order[i]]);
        w.push_back(weights[order[i]]);
      }
      Batch b = pack(part);
      const double cur = lr * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * step / total_steps)));
      for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(cur);
      // Device-identity dropout: half the rows train the path for GPUs never seen.
      auto known = b.known * torch::bernoulli(torch::full_like(b.known, 0.5));
      // Kernel dropout: a third of the rows train the path for ops whose kernel on the
      // device is not known (another GPU, a fused op never run).
      auto kernel = b.kernel * torch::bernoulli(torch::full_like(b.kernel, 2.0 / 3.0));
      auto pred = net->forward(b.tokens, b.mask, b.global, known, kernel);
      auto target = torch::from_blob(y.data(), {static_cast<std::int64_t>(y.size())}, torch::kFloat32);
      auto weight = torch::from_blob(w.data(), {static_cast<std::int64_t>(w.size())}, torch::kFloat32);
      auto loss = (weight * (pred - target).square()).sum() / weight.sum();
      opt.zero_grad();
      loss.backward();
      opt.step();
      sum += loss.item<double>() * static_cast<double>(e - s);
      ++step;
    }
    last = sum / static_cast<double>(rows.size());
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    log.info("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs) + " mse(log) " +
             std::to_string(last) + " (" + std::to_string(static_cast<long>(elapsed + 0.5)) + " s)");
  }
  net->eval();
  return last;
}

// Each op family weighs in proportion to the square root of its row count, so that the
// few-thousand-row families are not drowned by bmm.
std::vector<float> family_weights(const std::vector<const Measurement*>& data) {
  std::map<OpFamily, double> count;
  for (const auto* m : data) count[m->op.family] += 1;
  std::vector<float> w(data.size());
  double sum = 0;
  for (size_t i = 0; i < data.size(); ++i) sum += w[i] = static_cast<float>(1.0 / std::sqrt(count[data[i]->op.family]));
  for (auto& x : w) x = static_cast<float>(x * data.size() / sum);
  return w;
}

// Lowers each family's floor to the fastest latency of `data` in it.
void lower_floors(std::map<OpFamily, double>& floors, const std::vector<const Measurement*>& data) {
  for (const auto* m : data) {
    auto [it, fresh] = floors.emplace(m->op.family, m->latency_ms);
    if (!fresh) it->second = std::min(it->second, m->latency_ms);
  }
}

std::vector<float> log_ratio_targets(const std::vector<const Measurement*>& data,
                                     const std::vector<FeatureRow>& rows) {
  std::vector<float> y(data.size());
  for (size_t i = 0; i < data.size(); ++i)
    y[i] = static_cast<float>(std::log(data[i]->latency_ms / rows[i].baseline_ms));
  return y;
}

std::unique_ptr<TorchModel> train_model(const std::vector<const Measurement*>& data, const TrainOptions& options,
                                        Logger& log) {
  if (data.empty()) throw InputError("", "", "no training data");
  torch::set_num_threads(options.threads);
  torch::manual_seed(options.seed);
  const auto t0 = std::chrono::steady_clock::now();
  auto model = std::make_unique<TorchModel>();
  model->arch = {options.token_hidden, options.head_hidden};
  model->net = Net(model->arch);
  std::vector<FeatureRow> rows = features_of(data);
  std::vector<const FeatureRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  for (const auto* m : data) {
    if (!model->known_devices.insert(m->device->name).second) continue;
    auto& f = model->known_features[m->device->name];
    f.resize(kDeviceIdentityFeatures);
    device_features(*m->device, f.data());
  }
  lower_floors(model->floors_ms, data);  // per family, the fastest on any GPU
  model->overhead_ms = measurement_overheads_ms(data);
  // Global-feature normalisation from the training rows.
  {
    Batch all = pack(ptrs);
    torch::NoGradGuard guard;
    model->net->g_mean.copy_(all.global.mean(0));
    model->net->g_std.copy_(all.global.std(0).clamp_min(1e-3));
  }
  const auto y = log_ratio_targets(data, rows);
  const auto weights = family_weights(data);
  log.info("training the network on " + std::to_string(data.size()) + " rows of " +
           std::to_string(model->known_devices.size()) + " GPU(s) (" + std::to_string(options.epochs) +
           " epochs)");
  const double loss = fit(model->net, ptrs, y, weights, options.epochs, options.batch_size,
                          options.learning_rate, options.seed, log);
  if (options.unseen_epochs > 0 && options.unseen_epochs != options.epochs) {
    // Same seed, data and normalisation; its own (shorter) schedule.
    log.info("training the network for unseen GPUs (" + std::to_string(options.unseen_epochs) + " epochs)");
    torch::manual_seed(options.seed);
    model->unseen_net = Net(model->arch);
    {
      torch::NoGradGuard guard;
      model->unseen_net->g_mean.copy_(model->net->g_mean);
      model->unseen_net->g_std.copy_(model->net->g_std);
    }
    fit(model->unseen_net, ptrs, y, weights, options.unseen_epochs, options.batch_size, options.learning_rate,
        options.seed, log);
  }
  // Residual memories (config_memory.h) from each network's predictions for its training rows,
  // priced with their identity: the main network's with the rows' recorded kernels and without,
  // the unseen-GPU network's without.
  TorchModel& impl = *model;
  impl.memory_kernel = ConfigMemory::build(data, run_net(impl.net, ptrs));
  for (auto& r : rows) r.kernel_known = 0;
  impl.memory_plain = ConfigMemory::build(data, run_net(impl.net, ptrs));
  if (impl.has_unseen()) impl.memory_unseen = ConfigMemory::build(data, run_net(impl.unseen_net, ptrs));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::ostringstream text;
  text << "trained on " << data.size() << " rows, " << options.epochs << " epochs, batch "
       << options.batch_size << ", lr " << options.learning_rate << ", seed " << options.seed
       << ", final train mse(log) " << loss << ", " << seconds << " s on " << options.threads
       << " thread(s); unseen-GPU network "
       << (model->has_unseen() ? std::to_string(options.unseen_epochs) + " epochs" : std::string("the same"))
       << "; residual memory of " << model->memory_plain.size() << " configurations";
  model->provenance_text = text.str();
  return model;
}

void TorchModel::fine_tune(const std::vector<const Measurement*>& target,
                           const std::vector<const Measurement*>& replay, const FewShotOptions& options,
                           Logger& log) {
  if (target.empty()) throw InputError("", "", "no samples of the GPU to adapt to");
  torch::set_num_threads(options.threads);
  torch::manual_seed(options.seed);
  std::vector<const Measurement*> mix;
  for (int r = 0; r < options.repeat_target; ++r) mix.insert(mix.end(), target.begin(), target.end());
  std::vector<const Measurement*> pool = replay;
  std::mt19937_64 rng(options.seed);
  std::shuffle(pool.begin(), pool.end(), rng);
  if (static_cast<int>(pool.size()) > options.replay_rows) pool.resize(options.replay_rows);
  mix.insert(mix.end(), pool.begin(), pool.end());
  std::vector<FeatureRow> rows = features_of(mix);
  // The new GPU's samples train the pathway without device identity: 200 samples cannot
  // teach the network what a never-seen point in spec space means (tried: one held-out GPU
  // with specs outside the training range got 270 % MAPE), and the GPU stays "unknown".
  const std::size_t target_rows = static_cast<std::size_t>(options.repeat_target) * target.size();
  // Their kernels are not known either when the GPU's other ops are priced.
  for (std::size_t i = 0; i < target_rows; ++i) rows[i].device_known = rows[i].kernel_known = 0;
  std::vector<const FeatureRow*> ptrs;
  for (const auto& r : rows) ptrs.push_back(&r);
  // The network learns what the residual memory of its configurations does not already
  // explain (predictions multiply the two): without this, a sample whose configuration the
  // memory knows would be corrected twice.
  auto targets = log_ratio_targets(mix, rows);
  for (std::size_t i = 0; i < mix.size(); ++i)
    targets[i] -= static_cast<float>(memory_for(false, rows[i].kernel_known > 0).log_factor(mix[i]->op));
  // The adapted GPU stays unknown: what is tuned is the network that prices unknown GPUs.
  fit(net_for(false), ptrs, targets, family_weights(mix), options.epochs, 256, options.learning_rate,
      options.seed, log);
  lower_floors(floors_ms, target);  // how low the adapted GPU's floor goes
  provenance_text += "; fine-tuned on " + std::to_string(target.size()) + " target samples";
}

std::vector<double> TorchModel::predict_rows(const FeatureRow* rows, std::size_t count) const {
  // Rows of known GPUs go to the main network, the others to the unseen-GPU network.
  std::vector<const FeatureRow*> part[2];
  std::vector<std::size_t> where[2];
  for (std::size_t i = 0; i < count; ++i) {
    const int k = rows[i].device_known > 0 || !has_unseen() ? 0 : 1;
    part[k].push_back(&rows[i]);
    where[k].push_back(i);
  }
  std::vector<double> out(count);
  for (int k = 0; k < 2; ++k) {
    if (part[k].empty()) continue;
    const auto ms = run_net(k == 0 ? net : unseen_net, part[k]);
    for (std::size_t j = 0; j < ms.size(); ++j) out[where[k][j]] = ms[j];
  }
  return out;
}

std::vector<double> TorchModel::predict_queries(const std::vector<PredictQuery>& queries) const {
  // Chunks with one reused feature buffer (4096 rows of 2.7 kB), where materialising every
  // row first costs more than the network. Queries go in op-family order: a family's trees
  // have the same token count, so each packed batch has little padding whatever the chunk.
  constexpr std::size_t kChunk = 4096;
  std::vector<std::size_t> order(queries.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return queries[a].op->family < queries[b].op->family;
  });
  std::vector<double> out(queries.size(), std::numeric_limits<double>::quiet_NaN());
  std::vector<FeatureRow> rows(std::min(kChunk, queries.size()));
  std::vector<std::size_t> where;
  std::vector<const ConfigMemory*> memory_of;  // per priced query of the chunk
  std::vector<double> floor_of;                // its floor guard (0: a GPU of the data)
  const DeviceSpec* last_device = nullptr;     // queries mostly share a device
  DevicePricing pricing;                       // of last_device
  const std::vector<float>* sibling_identity = nullptr;  // its trained GPU's features, for a sibling
  for (std::size_t s = 0; s < order.size(); s += kChunk) {
    const std::size_t e = std::min(order.size(), s + kChunk);
    std::size_t n = 0;
    where.clear();
    memory_of.clear();
    floor_of.clear();
    for (std::size_t k = s; k < e; ++k) {
      const PredictQuery& q = queries[order[k]];
      FeatureRow& row = rows[n];
      if (q.device != last_device) {
        last_device = q.device;
        pricing = pricing_of(*q.device);
        sibling_identity = pricing.kind == DevicePricing::kSibling ? &known_features.at(pricing.as) : nullptr;
      }
      const bool known = q.allow_identity && pricing.kind != DevicePricing::kUnseen;
      // A recorded kernel is used only with the GPU's identity: on a GPU outside the data the
      // kernel features make the unseen-GPU network worse (held-out V100: 27.8 -> 32.8 %).
      if (!make_features(*q.op, *q.device, row, q.allow_kernel && known)) continue;
      row.device_known = known ? 1.0f : 0.0f;
      // A sibling is priced with its trained GPU's identity and its own op-relative figures.
      if (known && sibling_identity)
        std::copy(sibling_identity->begin(), sibling_identity->end(), row.global + kRelativeFeatures + kKernelFeatures);
      where.push_back(order[k]);
      memory_of.push_back(&memory_for(known, row.kernel_known > 0));
      floor_of.push_back(known ? 0.0 : floor_ms(q.op->family));
      ++n;
    }
    const auto ms = predict_rows(rows.data(), n);
    for (std::size_t k = 0; k < n; ++k) {
      const PredictQuery& q = queries[where[k]];
      out[where[k]] = std::max(floor_of[k], q.use_memory ? ms[k] * memory_of[k]->factor(*q.op) : ms[k]);
    }
  }
  return out;
}

std::string TorchModel::serialise() const {
  ModelFileHeader header;
  header.token_hidden = arch.token_hidden;
  header.head_hidden = arch.head_hidden;
  header.provenance = provenance_text;
  header.known_devices = known_devices;
  header.known_features = known_features;
  header.unseen_floor_ms = floors_ms;
  header.overhead_ms = overhead_ms;
  ModelPayload payload;
  payload[kMainWeights] = serialise_net(net);
  if (has_unseen()) payload[kUnseenWeights] = serialise_net(unseen_net);
  payload[kMemoryKernel] = memory_kernel.serialise();
  payload[kMemoryPlain] = memory_plain.serialise();
  payload[kMemoryUnseen] = memory_unseen.serialise();
  return format_model_file(header, payload);
}

std::unique_ptr<TorchModel> load_model(const std::string& path) {
  reject_directory(path, "a cost model file (.dpcm)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open the cost model file");
  note_opened_input(path);  // no output of this process may replace it
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError(path, "", "read error");
  ModelPayload section;
  ModelFileHeader header = parse_model_file(bytes, path, section);
  auto model = std::make_unique<TorchModel>();
  model->arch = {header.token_hidden, header.head_hidden};
  model->provenance_text = std::move(header.provenance);
  model->known_devices = std::move(header.known_devices);
  model->known_features = std::move(header.known_features);
  model->floors_ms = std::move(header.unseen_floor_ms);
  model->overhead_ms = std::move(header.overhead_ms);
  model->memory_kernel = ConfigMemory::parse(section[kMemoryKernel], path);
  model->memory_plain = ConfigMemory::parse(section[kMemoryPlain], path);
  model->memory_unseen = ConfigMemory::parse(section[kMemoryUnseen], path);
  auto read_net = [&](const std::string& bytes, const char* which) {
    Net net(model->arch);
    // Loading replaces each parameter by the stored tensor, whatever its shape: weights of
    // another architecture than the header's would load and then fail inside a prediction.
    auto shapes = [&net] {
      std::vector<std::vector<int64_t>> sizes;
      for (const auto& tensor : net->parameters()) sizes.push_back(tensor.sizes().vec());
      for (const auto& tensor : net->buffers()) sizes.push_back(tensor.sizes().vec());
      return sizes;
    };
    const auto expected = shapes();
    try {
      std::istringstream stream(bytes);
      torch::serialize::InputArchive archive;
      archive.load_from(stream);
      net->load(archive);
    } catch (const c10::Error& e) {
      throw InputError(path, "payload", std::string("cannot read the ") + which + " weights: " +
                                            std::string(e.what_without_backtrace()));
    }
    if (shapes() != expected)
      throw InputError(path, "payload", std::string("corrupted cost model file: the ") + which +
                                            " weights do not match the header's layer widths");
    net->eval();
    return net;
  };
  model->net = read_net(section[kMainWeights], "main network's");
  if (!section[kUnseenWeights].empty())
    model->unseen_net = read_net(section[kUnseenWeights], "unseen-GPU network's");
  return model;
}

class TorchPlugin final : public learned::Plugin {
 public:
  void set_threads(int threads) override { torch::set_num_threads(std::max(1, threads)); }
  std::unique_ptr<learned::ModelBackend> load(const std::string& path) override { return load_model(path); }
  std::unique_ptr<learned::ModelBackend> train(const std::vector<const Measurement*>& data,
                                               const TrainOptions& options, Logger& log) override {
    return train_model(data, options, log);
  }
  const char* blas_core() const override { return openblas_get_corename ? openblas_get_corename() : nullptr; }
};

}  // namespace
}  // namespace dpro::costmodel

// The plugin's one exported symbol (the module is built with hidden visibility).
extern "C" __attribute__((visibility("default"))) dpro::costmodel::learned::Plugin* dpro_learned_torch_plugin(
    int abi_version) {
  static dpro::costmodel::TorchPlugin plugin;
  return abi_version == dpro::costmodel::learned::kPluginAbiVersion ? &plugin : nullptr;
}
static_assert(std::is_same_v<decltype(&dpro_learned_torch_plugin), dpro::costmodel::learned::PluginFactory>);
static_assert(std::string_view(dpro::costmodel::learned::kPluginFactorySymbol) == "dpro_learned_torch_plugin");
