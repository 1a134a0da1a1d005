#include "profiler/record_cost.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace dpro::profiler {
namespace {

bool contains(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

int switch_records(CuptiApi& api, const ProbeCall& p, bool on) {
  return p.kind == native::ApiKind::kDriver ? api.enable_driver_api(p.cbid, on) : api.enable_runtime_api(p.cbid, on);
}

// One class: repetitions of (batch off, batch on), alternating which comes first so that a
// drift of the machine's speed does not favour either; the median per-call difference.
ClassCost measure(CuptiApi& api, CostProbe& probe, std::size_t index, const CalibrationOptions& o,
                  std::int64_t deadline) {
  const ProbeCall& p = probe.calls()[index];
  auto batch = [&](bool on) {
    switch_records(api, p, on);
    const std::int64_t t0 = probe.now_ns();
    probe.call(index, o.calls);
    return probe.now_ns() - t0;
  };
  batch(false);  // warm-up: first calls pay for lazy initialisation
  std::vector<std::int64_t> per_call;
  for (int r = 0; r < o.repetitions; ++r) {
    if (r >= 3 && probe.now_ns() > deadline) break;
    std::int64_t off = 0, on = 0;
    if (r % 2 == 0) {
      off = batch(false);
      on = batch(true);
    } else {
      on = batch(true);
      off = batch(false);
    }
    per_call.push_back((on - off) / o.calls);
  }
  std::sort(per_call.begin(), per_call.end());
  ClassCost c;
  c.record_class = p.record_class;
  c.probe = p.name;
  c.ns = std::max<std::int64_t>(per_call[per_call.size() / 2], 0);
  c.low_ns = per_call.front();
  c.high_ns = per_call.back();
  c.repetitions = static_cast<int>(per_call.size());
  c.calls = o.calls;
  return c;
}

}  // namespace

Calibration calibrate_record_costs(CuptiApi& api, CostProbe& probe, const std::vector<std::string>& recorded,
                                   const CalibrationOptions& options) {
  Calibration out;
  const std::int64_t start = probe.now_ns();
  for (std::size_t i = 0; i < probe.calls().size(); ++i) {
    const ProbeCall& p = probe.calls()[i];
    if (!contains(recorded, p.record_class)) continue;
    if (const int rc = switch_records(api, p, false); rc != 0) {
      out.failures.push_back(p.record_class + ": its records of " + p.name + " cannot be switched (" + api.error_text(rc) + ")");
      continue;
    }
    out.costs.push_back(measure(api, probe, i, options, start + options.budget_ns));
    const bool session_records_it = p.kind == native::ApiKind::kRuntime && options.all_runtime_calls;
    switch_records(api, p, session_records_it);
  }
  out.took_ns = probe.now_ns() - start;
  return out;
}

std::vector<std::string> uncalibrated_classes(const std::vector<std::string>& recorded, const Calibration& c) {
  std::vector<std::string> out;
  for (const std::string& r : recorded)
    if (std::none_of(c.costs.begin(), c.costs.end(), [&](const ClassCost& k) { return k.record_class == r; }))
      out.push_back(r);
  return out;
}

void write_calibration_metadata(native::RecordEncoder& out, const Calibration& c,
                                const std::vector<std::string>& uncalibrated) {
  std::string costs, how;
  for (const ClassCost& k : c.costs) {
    costs.append(costs.empty() ? "" : ",").append(k.record_class).append("=").append(std::to_string(k.ns)).append("ns");
    char line[256];
    std::snprintf(line, sizeof line, "%s%s: %s, %d x %d calls, median %lld ns per record (%lld to %lld)",
                  how.empty() ? "" : "; ", k.record_class.c_str(), k.probe.c_str(), k.repetitions, k.calls,
                  static_cast<long long>(k.ns), static_cast<long long>(k.low_ns), static_cast<long long>(k.high_ns));
    how += line;
  }
  for (const std::string& f : c.failures) how.append(how.empty() ? "" : "; ").append(f);
  how.append(how.empty() ? "" : "; ").append("took ").append(std::to_string(c.took_ns / 1000)).append(" us");
  if (!costs.empty()) out.add_metadata(native::kMetaRecordCost, costs);
  out.add_metadata(native::kMetaRecordCostCalibration, how);
  std::string list;
  for (const std::string& u : uncalibrated) list.append(list.empty() ? "" : ",").append(u);
  out.add_metadata(native::kMetaRecordCostUncalibrated, list);
}

void write_no_calibration(native::RecordEncoder& out, std::string_view why) {
  out.add_metadata(native::kMetaRecordCostCalibration, why);
}

void ProbeRecordFilter::set_probes(const std::vector<ProbeCall>& calls) {
  probes_.clear();
  for (const ProbeCall& p : calls) probes_.emplace_back(p.kind, p.cbid);
}

bool ProbeRecordFilter::drops(native::ApiKind kind, std::uint32_t cbid, std::int64_t start) const {
  if (start < from_.load() || start > to_.load()) return false;
  return std::find(probes_.begin(), probes_.end(), std::make_pair(kind, cbid)) != probes_.end();
}

void run_calibration(CuptiApi& api, CostProbe& probe, ProbeRecordFilter& filter, RecordSink& sink,
                     const CalibrationRun& run, const std::atomic<bool>& stop) {
  const std::int64_t give_up = probe.now_ns() + run.wait_ns;
  while (!probe.ready()) {
    if (stop.load() || probe.now_ns() > give_up) {
      sink.encode([](native::RecordEncoder& enc) { write_no_calibration(enc, "not run: CUDA was not ready"); });
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (stop.load()) return;
  filter.open(probe.trace_clock_ns());
  const Calibration c = calibrate_record_costs(api, probe, run.recorded, run.options);
  filter.close(probe.trace_clock_ns());
  const std::vector<std::string> uncalibrated = uncalibrated_classes(run.recorded, c);
  sink.encode([&](native::RecordEncoder& enc) { write_calibration_metadata(enc, c, uncalibrated); });
}

}  // namespace dpro::profiler
