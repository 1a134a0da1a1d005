#include "whatif/comm/compress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "costmodel/op_desc_from_graph.h"
#include "graph/editor.h"
#include "hw/device_spec.h"
#include "trace/iterations.h"

namespace dpro::comm {

namespace {

struct MethodName {
  CompressionMethod method;
  const char* name;
};
constexpr MethodName kMethodNames[kCompressionMethodCount] = {
    {CompressionMethod::kNone, "none"},         {CompressionMethod::kFp16, "fp16"},
    {CompressionMethod::kBf16, "bf16"},         {CompressionMethod::kTopK, "topk"},
    {CompressionMethod::kRandomK, "randomk"},   {CompressionMethod::kDgc, "dgc"},
    {CompressionMethod::kEfSignSgd, "efsignsgd"}, {CompressionMethod::kPowerSgd, "powersgd"}};

bool takes_ratio(CompressionMethod m) {
  return m == CompressionMethod::kTopK || m == CompressionMethod::kRandomK || m == CompressionMethod::kDgc;
}

std::string known_methods() {
  std::string out;
  for (const auto& m : kMethodNames) out += std::string(out.empty() ? "" : ", ") + m.name;
  return out + " (topk, randomk, dgc take :RATIO in (0, 1]; powersgd takes :RANK >= 1)";
}

void check_spec(const CompressionSpec& s, const std::string& text) {
  if (takes_ratio(s.method) && !(s.ratio > 0 && s.ratio <= 1))
    throw OptionError("compress", text, fmt::format("{} needs a ratio in (0, 1], got {:g}", to_string(s.method), s.ratio));
  if (s.method == CompressionMethod::kPowerSgd && s.rank < 1)
    throw OptionError("compress", text, fmt::format("powersgd needs a rank of at least 1, got {}", s.rank));
}

CompressionSpec parse_spec(const std::string& item, const std::string& text) {
  const auto colon = item.find(':');
  const std::string name = item.substr(0, colon);
  CompressionSpec spec;
  const auto* found = std::find_if(std::begin(kMethodNames), std::end(kMethodNames),
                                   [&](const MethodName& m) { return name == m.name; });
  if (found == std::end(kMethodNames))
    throw OptionError("compress", text, "unknown method '" + name + "'; known: " + known_methods());
  spec.method = found->method;
  if (colon == std::string::npos) return spec;
  const std::string param = item.substr(colon + 1);
  if (!takes_ratio(spec.method) && spec.method != CompressionMethod::kPowerSgd)
    throw OptionError("compress", text, std::string(found->name) + " takes no parameter");
  std::size_t used = 0;
  try {
    if (takes_ratio(spec.method)) spec.ratio = std::stod(param, &used);
    else spec.rank = std::stoi(param, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != param.size())
    throw OptionError("compress", text, "'" + param + "' is not a " + (takes_ratio(spec.method) ? "ratio" : "rank"));
  check_spec(spec, text);
  return spec;
}

// Bytes of memory traffic and flops of one kernel.
struct KernelWork {
  double bytes = 0;
  double flops = 0;
};

// What a method does to one all-reduce of n elements of `element` bytes on `group` ranks.
struct Plan {
  CollectiveOp op = CollectiveOp::kAllReduce;
  std::vector<std::int64_t> messages;  // model message sizes, one per collective it runs
  std::int64_t wire_bytes = 0;         // what one rank sends
  KernelWork compress, decompress;
  std::int64_t residual_bytes = 0;
};

std::int64_t ceil_i(double x) { return static_cast<std::int64_t>(std::ceil(x)); }

Plan plan_for(const CompressionSpec& s, double n, int element, int group) {
  Plan p;
  const double full = n * element;
  const double k = std::max<double>(1, std::ceil(s.ratio * n));
  const double residual = has_error_feedback(s.method) ? kResidualBytesPerElement * n : 0;
  p.residual_bytes = static_cast<std::int64_t>(residual);
  p.compress.bytes = residual;  // read the residual into the gradient
  p.decompress.bytes = residual;  // write the new residual
  switch (s.method) {
    case CompressionMethod::kNone: break;
    case CompressionMethod::kFp16:
    case CompressionMethod::kBf16: {
      const bool cast = element > 2;
      p.wire_bytes = ceil_i(cast ? 2 * n : full);
      p.messages = {p.wire_bytes};
      if (cast) p.compress.bytes += kCastBytesPerElement * n, p.decompress.bytes += kCastBytesPerElement * n;
      break;
    }
    case CompressionMethod::kTopK:
    case CompressionMethod::kDgc: {
      p.op = CollectiveOp::kAllGather;
      p.wire_bytes = ceil_i(8 * k);
      p.messages = {p.wire_bytes * group};
      const double passes = s.method == CompressionMethod::kTopK ? kTopKSelectionPasses : kDgcPasses;
      p.compress.bytes += passes * full + (s.method == CompressionMethod::kDgc ? kDgcSampleFraction * full : 0) + 8 * k;
      p.decompress.bytes += group * 8 * k + full;  // scatter-add of every rank's pairs into a zeroed dense buffer
      break;
    }
    case CompressionMethod::kRandomK:
      p.wire_bytes = ceil_i(4 * k);
      p.messages = {p.wire_bytes};
      p.compress.bytes += 2 * 4 * k;           // gather k values (seeded indices, generated on the GPU)
      p.decompress.bytes += full + 4 * k;      // zeroed dense buffer, scatter the k sums
      break;
    case CompressionMethod::kEfSignSgd: {
      p.op = CollectiveOp::kAllGather;
      p.wire_bytes = ceil_i(n / 8) + 4;
      p.messages = {p.wire_bytes * group};
      p.compress.bytes += kSignPasses * full + n / 8;
      p.decompress.bytes += group * (n / 8.0 + 4) + full;
      break;
    }
    case CompressionMethod::kPowerSgd: {
      const double rows = std::ceil(std::sqrt(n)), cols = std::ceil(n / rows), q = s.rank;
      const std::int64_t pm = ceil_i(4 * q * rows), qm = ceil_i(4 * q * cols);
      p.messages = {pm, qm};
      p.wire_bytes = pm + qm;
      const double gemm_flops = 2 * rows * cols * q;
      p.compress.bytes += 4 * rows * cols + 4 * q * (rows + cols);  // P = M Q
      p.compress.flops = gemm_flops;
      // Gram-Schmidt on P (q columns, each a pass over P), Q = M^T P, M ~ P Q^T.
      p.decompress.bytes += 2 * q * 4 * q * rows + 2 * (4 * rows * cols + 4 * q * (rows + cols));
      p.decompress.flops = 2 * gemm_flops + 2 * rows * q * q;
      break;
    }
  }
  return p;
}

Nanos kernel_time(const KernelWork& w, const GpuRates& rates) {
  const double memory_ns = w.bytes / rates.bandwidth_gbs;
  const double compute_ns = w.flops / (rates.fp32_tflops * 1e3 * kGemmEfficiency);
  return kKernelOverheadNs + nanos_from_double(std::max(memory_ns, compute_ns));
}

bool is_elementwise(costmodel::OpFamily f) {
  using F = costmodel::OpFamily;
  switch (f) {
    case F::kAdd: case F::kMul: case F::kDiv: case F::kPow: case F::kAddScalar: case F::kMulScalar:
    case F::kDivScalar: case F::kPowScalar: case F::kGelu: case F::kRelu: case F::kTanh: return true;
    default: return false;
  }
}

// A kernel node on `collective`'s stream and rank; `at`: its measured start, for reports.
graph::Node kernel_beside(const graph::Node& collective, Nanos at, Nanos duration) {
  graph::Node k;
  k.kind = graph::NodeKind::kKernel;
  k.rank = collective.rank;
  k.track = collective.track;
  k.measured_start = at;
  k.duration = duration;
  return k;
}

// Inserts the compression kernel before the collective and the decompression kernel after it.
void insert_kernels(graph::Editor& editor, graph::Dfg& dfg, const CommOp& op, Nanos before, Nanos after,
                    const std::string& method) {
  const graph::Node c = dfg.node(op.node);
  std::vector<graph::Edge> ins;
  for (const graph::EdgeId e : editor.in_edges(op.node)) {
    graph::Edge edge = dfg.edge(e);
    if (edge.kind == graph::EdgeKind::kCollective || edge.dst_point != graph::Point::kStart) continue;
    edge.dst = graph::NodeId::none();
    ins.push_back(edge);
  }
  ins.push_back({graph::NodeId::none(), op.node, graph::EdgeKind::kStreamOrder, graph::Point::kEnd, graph::Point::kStart, 0});
  graph::OpDesc compress_desc;
  compress_desc.kind = graph::NodeKind::kKernel;
  compress_desc.name = dfg.ops().intern("dpro::compress(" + method + ")");
  editor.insert(kernel_beside(c, c.measured_start, before), ins, dfg.ops().add(compress_desc));

  std::vector<graph::Edge> outs{{op.node, graph::NodeId::none(), graph::EdgeKind::kStreamOrder, graph::Point::kEnd,
                                 graph::Point::kStart, 0}};
  for (const graph::EdgeId e : editor.out_edges(op.node)) {
    graph::Edge edge = dfg.edge(e);
    if (edge.kind == graph::EdgeKind::kCollective || edge.src_point != graph::Point::kEnd) continue;
    edge.src = graph::NodeId::none();
    outs.push_back(edge);
  }
  graph::OpDesc decompress_desc;
  decompress_desc.kind = graph::NodeKind::kKernel;
  decompress_desc.name = dfg.ops().intern("dpro::decompress(" + method + ")");
  editor.insert(kernel_beside(c, c.measured_start + c.measured_duration, after), outs, dfg.ops().add(decompress_desc));
}

int element_bytes_of(const trace::TraceSet& traces, const graph::Dfg& dfg, const CommOp& op) {
  const trace::CollectiveInfo* info = graph::collective_info(traces.ranks[op.rank_index], dfg.node(op.node));
  if (!info || !info->dtype) return 4;
  const std::int64_t b = trace::element_bytes(*info->dtype);
  return b > 0 ? static_cast<int>(b) : 4;
}

}  // namespace

const char* to_string(CompressionMethod method) { return kMethodNames[static_cast<int>(method)].name; }

bool has_error_feedback(CompressionMethod method) {
  return method != CompressionMethod::kNone && method != CompressionMethod::kFp16 && method != CompressionMethod::kBf16;
}

Compression parse_compression(const std::string& text) {
  Compression c;
  std::vector<CompressionSpec> specs;
  std::size_t begin = 0;
  while (true) {
    const auto comma = text.find(',', begin);
    specs.push_back(parse_spec(text.substr(begin, comma - begin), text));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (specs.size() == 1) c.all = specs.front();
  else c.per_bucket = std::move(specs);
  return c;
}

void validate(const Compression& compression) {
  const auto text = [](const CompressionSpec& s) {
    return std::string(to_string(s.method)) +
           (takes_ratio(s.method) ? fmt::format(":{:g}", s.ratio)
                                  : s.method == CompressionMethod::kPowerSgd ? fmt::format(":{}", s.rank) : "");
  };
  const auto known = [](const CompressionSpec& s) {
    return static_cast<int>(s.method) >= 0 && static_cast<int>(s.method) < kCompressionMethodCount;
  };
  if (!known(compression.all)) throw OptionError("compress", "", "unknown method; known: " + known_methods());
  check_spec(compression.all, text(compression.all));
  for (const auto& s : compression.per_bucket) {
    if (!known(s)) throw OptionError("compress", "", "unknown method; known: " + known_methods());
    check_spec(s, text(s));
  }
}

std::optional<hw::Measured<hw::KernelFit>> profiled_compression(const CompressionSpec& spec, int element_bytes,
                                                                const GpuRates& rates) {
  const hw::DeviceRates& m = rates.measured;
  switch (spec.method) {
    case CompressionMethod::kFp16: return element_bytes > 2 ? m.kernel(hw::kCastToFp16Kernel) : std::nullopt;
    case CompressionMethod::kBf16: return element_bytes > 2 ? m.kernel(hw::kCastToBf16Kernel) : std::nullopt;
    case CompressionMethod::kTopK: return m.kernel("topk", spec.ratio);
    case CompressionMethod::kRandomK: return m.kernel("randomk", spec.ratio);
    case CompressionMethod::kEfSignSgd: return m.kernel("signpack");
    case CompressionMethod::kPowerSgd: return m.kernel("powersgd", spec.rank);
    case CompressionMethod::kNone:
    case CompressionMethod::kDgc: return std::nullopt;
  }
  return std::nullopt;
}

GpuRates measure_gpu_rates(const graph::Dfg& dfg, const trace::TraceSet& traces, const std::string& devices_dir,
                           const std::string& device_profile, const std::string& device) {
  return GpuRateMeter(dfg, traces, devices_dir, device_profile, device).measure(dfg);
}

GpuRateMeter::GpuRateMeter(const graph::Dfg& dfg, const trace::TraceSet& traces, const std::string& devices_dir,
                           const std::string& device_profile, const std::string& device) {
  const std::string dir = devices_dir.empty() ? hw::DeviceCatalog::default_directory() : devices_dir;
  const hw::DeviceSpec* spec = nullptr;
  std::optional<hw::DeviceCatalog> catalog;
  if (std::filesystem::is_directory(dir)) catalog = hw::DeviceCatalog::load_directory(dir);
  if (catalog)
    for (const std::string& name : traces.gpu_names())
      if (!spec) spec = catalog->find(name);
  if (!device_profile.empty()) {
    if (!catalog) throw InputError(dir, "", "no device catalog here, which a device profile's GPU is looked up in");
    spec_rates_.measured = hw::load_device_rates(device_profile, {device, traces.gpu_names()}, *catalog);
  }
  if (spec) spec_rates_.gpu = spec->name;
  spec_rates_.fp32_tflops = spec ? spec->peak_flops(hw::DType::kFloat32) / 1e12 : kFallbackFp32Tflops;
  if (spec) {
    spec_rates_.bandwidth_gbs = spec->memory_bandwidth_gbs * kDatasheetBandwidthEfficiency;
    spec_rates_.bandwidth_source = "datasheet " + spec->name;
  } else {
    spec_rates_.bandwidth_gbs = kFallbackBandwidthGbs;
    spec_rates_.bandwidth_source = "fallback";
  }
  op_bytes_.assign(dfg.ops().size(), std::numeric_limits<double>::quiet_NaN());
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::OpId op = dfg.op_of(id);
    if (dfg.node(id).kind == graph::NodeKind::kKernel && op.valid() && std::isnan(op_bytes_[op.value]))
      op_bytes_[op.value] = sample_bytes(dfg, op);
  }
}

double GpuRateMeter::sample_bytes(const graph::Dfg& dfg, graph::OpId op) const {
  const graph::OpDesc& desc = dfg.ops().op(op);
  const costmodel::OpDesc d = costmodel::op_desc_of_kernel(dfg.ops(), desc, desc);
  if (!is_elementwise(d.family) || !d.describable() || d.bytes() < kMinBandwidthSampleBytes) return kNotASample;
  return d.bytes();
}

GpuRates GpuRateMeter::measure(const graph::Dfg& dfg) const {
  GpuRates rates = spec_rates_;
  double bytes = 0, ns = 0;
  for (const graph::NodeId id : dfg.node_ids()) {
    const graph::Node& n = dfg.node(id);
    const graph::OpId op = dfg.op_of(id);
    if (n.kind != graph::NodeKind::kKernel || !op.valid() || n.duration <= 0) continue;
    const bool described = op.value < op_bytes_.size() && !std::isnan(op_bytes_[op.value]);
    const double b = described ? op_bytes_[op.value] : sample_bytes(dfg, op);
    if (b == kNotASample) continue;
    bytes += b;
    ns += static_cast<double>(n.duration);
    ++rates.bandwidth_kernels;
  }
  if (rates.bandwidth_kernels > 0) {
    rates.bandwidth_gbs = bytes / ns;
    rates.bandwidth_source = "measured";
  }
  return rates;
}

namespace {

// A bucket with the CommOp that carries its time, for compress_allreduces to re-time.
struct FoundBucket {
  GradientBucket bucket;
  CommOp* carrier = nullptr;
};

std::vector<FoundBucket> find_buckets(const graph::Dfg& dfg, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                      const std::vector<std::size_t>* bucket_end, std::optional<int> ranks) {
  std::map<std::size_t, std::vector<CommOp*>> per_rank;  // as fuse_allreduce_buckets lists them
  for (CommOp& op : ops)
    if (op.op == CollectiveOp::kAllReduce && op.bytes) per_rank[op.rank_index].push_back(&op);
  std::vector<FoundBucket> out;
  for (auto& [ri, list] : per_rank) {
    const trace::TraceRank& rank = traces.ranks[ri];
    std::vector<std::size_t> ends;
    if (bucket_end) ends = *bucket_end;
    else
      for (std::size_t k = 1; k <= list.size(); ++k) ends.push_back(k);
    int iteration = -2;
    std::size_t index = 0;  // bucket index within its iteration
    std::size_t begin = 0;
    for (const std::size_t end : ends) {
      CommOp& carrier = *list[end - 1];
      const int it = trace::iteration_index_at(rank, carrier.measured_start);
      index = it == iteration ? index + 1 : 0;
      iteration = it;
      FoundBucket f;
      f.carrier = &carrier;
      f.bucket.rank_index = ri;
      f.bucket.iteration = it;
      f.bucket.position = index;
      for (std::size_t k = begin; k < end; ++k) {
        f.bucket.shape.bytes += *list[k]->bytes;
        f.bucket.shape.transfer = saturating_add(f.bucket.shape.transfer, list[k]->transfer);
        f.bucket.members.push_back(list[k]->node);
      }
      begin = end;
      if (!carrier.world_group) continue;
      f.bucket.shape.group = ranks ? *ranks : carrier.group_size;
      f.bucket.shape.element_bytes = element_bytes_of(traces, dfg, carrier);
      out.push_back(std::move(f));
    }
  }
  return out;
}

}  // namespace

MethodCost price_method(const CompressionSpec& spec, const BucketShape& b, const CollectiveModel& target,
                        const GpuRates& rates) {
  MethodCost cost;
  cost.transfer = b.transfer;
  cost.wire_bytes = b.bytes;
  if (spec.method == CompressionMethod::kNone || b.group < 2) return cost;
  const double n = std::ceil(static_cast<double>(b.bytes) / b.element_bytes);
  const Plan plan = plan_for(spec, n, b.element_bytes, b.group);
  const Placement where = place(target.cluster(), b.group);
  const double old_us = target.estimate({CollectiveOp::kAllReduce, b.bytes, where}).time_us;
  double new_us = 0;
  for (const std::int64_t m : plan.messages) new_us += target.estimate({plan.op, m, where}).time_us;
  cost.transfer = old_us > 0 ? nanos_from_double(static_cast<double>(b.transfer) * new_us / old_us) : b.transfer;
  const auto profiled = profiled_compression(spec, b.element_bytes, rates);
  cost.compress = profiled ? nanos_from_double(profiled->value.ns(n)) : kernel_time(plan.compress, rates);
  cost.decompress = kernel_time(plan.decompress, rates);
  cost.wire_bytes = plan.wire_bytes;
  cost.residual_bytes = plan.residual_bytes;
  return cost;
}

std::vector<GradientBucket> gradient_buckets(const graph::Dfg& dfg, const std::vector<CommOp>& ops,
                                             const trace::TraceSet& traces, const std::vector<std::size_t>* bucket_end,
                                             std::optional<int> ranks) {
  std::vector<CommOp> copy = ops;  // find_buckets hands out carriers to re-time; this caller only reads
  std::vector<GradientBucket> out;
  for (FoundBucket& f : find_buckets(dfg, copy, traces, bucket_end, ranks)) out.push_back(std::move(f.bucket));
  return out;
}

CompressionStats compress_allreduces(graph::BuiltGraph& built, std::vector<CommOp>& ops, const trace::TraceSet& traces,
                                     const CollectiveModel& target, const Compression& compression,
                                     const std::vector<std::size_t>* bucket_end, std::optional<int> ranks,
                                     const GpuRateMeter* meter) {
  validate(compression);
  CompressionStats stats;
  graph::Dfg& dfg = built.dfg;
  const std::vector<FoundBucket> found = find_buckets(dfg, ops, traces, bucket_end, ranks);
  if (std::none_of(ops.begin(), ops.end(), [](const CommOp& op) { return op.op == CollectiveOp::kAllReduce && op.bytes; }))
    return stats;
  stats.rates = meter ? meter->measure(dfg)
                      : measure_gpu_rates(dfg, traces, compression.devices_dir, compression.device_profile, compression.device);

  graph::Editor editor(built);
  std::map<std::pair<std::size_t, std::pair<CompressionMethod, int>>, std::int64_t> residual;  // per (rank, method, iteration)
  for (const FoundBucket& f : found) {
    const GradientBucket& b = f.bucket;
    CommOp& carrier = *f.carrier;
    ++stats.allreduces;
    if (b.shape.group < 2) {
      ++stats.single_rank;
      continue;
    }
    const CompressionSpec& spec =
        b.position < compression.per_bucket.size() ? compression.per_bucket[b.position]
        : compression.per_bucket.empty()          ? compression.all
                                                  : CompressionSpec{};
    if (spec.method == CompressionMethod::kNone) {
      ++stats.uncompressed;
      continue;
    }
    const MethodCost cost = price_method(spec, b.shape, target, stats.rates);
    const Nanos now = b.shape.transfer;
    // The bucket's time sits on its last member (fuse_allreduce_buckets); the others keep theirs (0).
    set_transfer(dfg, carrier, std::max<Nanos>(0, cost.transfer - (now - carrier.transfer)));
    insert_kernels(editor, dfg, carrier, cost.compress, cost.decompress, to_string(spec.method));
    stats.kernels_inserted += 2;

    MethodStats& m = stats.by_method[spec.method];
    if (const auto profiled = profiled_compression(spec, b.shape.element_bytes, stats.rates))
      m.compress_from_profile = profiled->figure;
    ++m.collectives;
    m.wire_bytes_before += b.shape.bytes;
    m.wire_bytes_after += cost.wire_bytes;
    m.comm_before = saturating_add(m.comm_before, now);
    m.comm_after = saturating_add(m.comm_after, cost.transfer);
    m.kernel_time = saturating_add(m.kernel_time, saturating_add(cost.compress, cost.decompress));
    residual[{b.rank_index, {spec.method, b.iteration}}] += cost.residual_bytes;
  }
  for (const auto& [key, r] : residual) {
    MethodStats& m = stats.by_method[key.second.first];
    m.residual_bytes = std::max(m.residual_bytes, r);
  }
  editor.commit();
  return stats;
}

}  // namespace dpro::comm
