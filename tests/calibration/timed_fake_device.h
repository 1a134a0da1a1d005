#pragma once
// A fake Device whose times follow known formulas, for the calibration's tests only (the
// executor's tests have their own, general fake). It keeps one host clock and one GPU cursor per
// stream: a launch costs the host `host_launch_ns` (a compression call more), then runs on its
// stream from max(stream free, issued) for the formula's time; an event completes when its
// stream gets to it. So a GPU that waits for the host measures the host's rate, as a real one does.
// Some measurements are made bad on purpose: the first launch of each call shape costs 1 ms more
// (what warm-up is for), and with `preempt_every` > 0 every such elapsed() reads 30 % long (what
// the median is for). Every span is checked against the buffers and the call's needs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "executor/device.h"
#include "kernels/compression_layout.h"

namespace dpro::executor::test {

struct FakeCosts {
  Nanos host_launch_ns = 5'000;
  Nanos compress_host_ns = 40'000;  // a compression call costs the host this much more (several kernels)
  Nanos kernel_launch_ns = 3'000;  // GPU time of an empty kernel
  double standin_slope = 1.01;     // a stand-in of d ns runs kernel_launch_ns + slope d
  Nanos h2d_latency_ns = 2'000, d2h_latency_ns = 2'500, d2d_latency_ns = 1'500;
  double h2d_gbps = 20, d2h_gbps = 25, d2d_gbps = 1'000;  // bytes per ns
  Nanos gemm_latency_ns = 2'000;
  // flops per ns (1e3 = 1 TFLOP/s)
  double fp32_flops_per_ns = 25e3, tf32_flops_per_ns = 50e3, half_flops_per_ns = 100e3;
  // kernels: latency + per-element ns
  std::map<std::string, std::pair<double, double>> kernels = {
      {"cast_fp32_bf16", {1'500, 0.004}}, {"cast_fp32_fp16", {1'400, 0.0045}}, {"topk", {20'000, 0.05}},
      {"randomk", {4'000, 0.002}},        {"signpack", {3'000, 0.003}},        {"powersgd", {30'000, 0.01}}};
  Nanos first_use_penalty_ns = 1'000'000;
  int preempt_every = 9;
};

class TimedFakeDevice : public Device {
 public:
  explicit TimedFakeDevice(FakeCosts costs = {}) : c_(std::move(costs)) {}

  std::string name() const override { return "timed fake"; }
  StreamHandle create_stream() override {
    cursor_.push_back(0);
    return static_cast<StreamHandle>(cursor_.size() - 1);
  }
  EventHandle create_event() override {
    events_.push_back(-1);
    return static_cast<EventHandle>(events_.size() - 1);
  }
  BufferHandle allocate(std::uint64_t bytes) override {
    buffers_[++next_buffer_] = bytes;
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    return next_buffer_;
  }
  void free(BufferHandle b) override {
    REQUIRE(buffers_.count(b) == 1);
    live_ -= buffers_[b];
    buffers_.erase(b);
  }

  void launch(StreamHandle s, const Launch& l) override {
    host_ += c_.host_launch_ns + (std::holds_alternative<CompressCall>(l) ? c_.compress_host_ns : 0);
    Nanos& cursor = cursor_.at(s);
    cursor = std::max(cursor, host_) + std::visit([&](const auto& call) { return cost(call); }, l);
    if (seen_.insert(shape_key(l)).second) cursor += c_.first_use_penalty_ns;
    ++launches_;
  }
  void record(EventHandle e, StreamHandle s) override {
    cursor_.at(s) = std::max(cursor_.at(s), host_);
    events_.at(e) = cursor_.at(s);
  }
  void wait(StreamHandle s, EventHandle e) override { cursor_.at(s) = std::max(cursor_.at(s), events_.at(e)); }
  void synchronize(EventHandle e) override { host_ = std::max(host_, events_.at(e)); }
  void synchronize() override {
    for (Nanos c : cursor_) host_ = std::max(host_, c);
  }
  Nanos elapsed(EventHandle from, EventHandle to) override {
    REQUIRE(events_.at(from) >= 0);
    REQUIRE(events_.at(to) >= events_.at(from));
    const Nanos d = events_.at(to) - events_.at(from);
    const bool preempted = c_.preempt_every > 0 && ++elapsed_calls_ % c_.preempt_every == 0;
    return preempted ? d * 13 / 10 : d;
  }
  Nanos host_now() override { return host_; }
  void host_spin(Nanos d) override { host_ += d; }

  std::uint64_t live_bytes() const { return live_; }
  std::uint64_t peak_bytes() const { return peak_; }
  long launches() const { return launches_; }

 private:
  // Checks that `span` lies in a live buffer and holds `need` bytes.
  void check(const Span& span, std::uint64_t need) const {
    INFO("span of buffer " << span.buffer << " at " << span.offset << " +" << span.bytes << ", need " << need);
    REQUIRE(buffers_.count(span.buffer) == 1);
    REQUIRE(span.bytes >= need);
    REQUIRE(span.offset + span.bytes <= buffers_.at(span.buffer));
  }
  Nanos cost(const StandinKernel& k) const {
    return c_.kernel_launch_ns + std::llround(c_.standin_slope * static_cast<double>(k.duration));
  }
  Nanos cost(const CopyCall& c) const {
    if (c.kind != CopyKind::kHostToDevice) check(c.src, c.bytes);
    if (c.kind != CopyKind::kDeviceToHost) check(c.dst, c.bytes);
    const double b = static_cast<double>(c.bytes);
    switch (c.kind) {
      case CopyKind::kHostToDevice: return c_.h2d_latency_ns + std::llround(b / c_.h2d_gbps);
      case CopyKind::kDeviceToHost: return c_.d2h_latency_ns + std::llround(b / c_.d2h_gbps);
      case CopyKind::kDeviceToDevice: return c_.d2d_latency_ns + std::llround(b / c_.d2d_gbps);
    }
    return 0;
  }
  Nanos cost(const GemmCall& g) const {
    const std::uint64_t w = dtype_bytes(g.dtype) * static_cast<std::uint64_t>(g.batch);
    check(g.a, w * g.m * g.k);
    check(g.b, w * g.k * g.n);
    check(g.c, w * g.m * g.n);
    const double flops = 2.0 * g.m * g.n * g.k * g.batch;
    const double rate = g.dtype != DType::kF32 ? c_.half_flops_per_ns
                        : g.math == MathMode::kTF32 ? c_.tf32_flops_per_ns : c_.fp32_flops_per_ns;
    return c_.gemm_latency_ns + std::llround(flops / rate);
  }
  Nanos cost(const CastCall& c) const {
    check(c.src, 4ull * c.elements);
    check(c.dst, dtype_bytes(c.to) * c.elements);
    return kernel_cost(c.to == DType::kBF16 ? "cast_fp32_bf16" : "cast_fp32_fp16", c.elements);
  }
  Nanos cost(const CompressCall& c) const {
    static const std::map<CompressMethod, std::pair<const char*, kernels::PayloadKind>> kinds = {
        {CompressMethod::kTopK, {"topk", kernels::PayloadKind::kTopK}},
        {CompressMethod::kRandomK, {"randomk", kernels::PayloadKind::kRandomK}},
        {CompressMethod::kSignPack, {"signpack", kernels::PayloadKind::kSignPack}},
        {CompressMethod::kPowerSgd, {"powersgd", kernels::PayloadKind::kPowerSgd}}};
    const auto& [name, payload] = kinds.at(c.method);
    REQUIRE_FALSE(c.decompress);
    check(c.src, 4ull * c.elements);
    check(c.residual, 4ull * c.elements);
    check(c.dst, kernels::payload_bytes(payload, c.elements, c.param, c.rows));
    return kernel_cost(name, c.elements);
  }
  Nanos cost(const MemsetCall& m) const {
    check(m.dst, m.dst.bytes);
    return 1'000 + static_cast<Nanos>(m.dst.bytes / 1'000);
  }
  template <typename Other>
  Nanos cost(const Other&) const {
    FAIL("the calibration launched a call it has no business with");
    return 0;
  }
  Nanos kernel_cost(const std::string& name, std::int64_t elements) const {
    const auto& [latency, per_element] = c_.kernels.at(name);
    return std::llround(latency + per_element * static_cast<double>(elements));
  }
  // A call's kind and shape: its first launch pays the first-use penalty.
  static std::string shape_key(const Launch& l) {
    std::string key = std::to_string(l.index());
    const auto add = [&](auto... v) { ((key += ' ' + std::to_string(v)), ...); };
    if (const auto* g = std::get_if<GemmCall>(&l)) add(g->m, g->n, g->k, g->batch, int(g->dtype), int(g->math));
    if (const auto* c = std::get_if<CopyCall>(&l)) add(int(c->kind), c->bytes);
    if (const auto* c = std::get_if<CastCall>(&l)) add(int(c->to), c->elements);
    if (const auto* c = std::get_if<CompressCall>(&l)) add(int(c->method), c->elements);
    return key;
  }

  FakeCosts c_;
  Nanos host_ = 0;
  std::vector<Nanos> cursor_;
  std::vector<Nanos> events_;
  std::map<BufferHandle, std::uint64_t> buffers_;
  BufferHandle next_buffer_ = 0;
  std::uint64_t live_ = 0, peak_ = 0;
  std::set<std::string> seen_;
  long elapsed_calls_ = 0;
  long launches_ = 0;
};

}  // namespace dpro::executor::test
