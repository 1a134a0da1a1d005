// Cost-model speed: batched CPU inference of the learned model (with and without feature
// extraction), roofline and roofline-share (the shipped table: kernel time and latency) throughput. Prints JSON lines; run by hand:
//   build/tests/costmodel/bench_costmodel [model.dpcm] [threads]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "costmodel/blas_tuning.h"
#include "costmodel/dataset.h"
#include "costmodel/learned_model.h"
#include "costmodel/paths.h"
#include "costmodel/roofline.h"
#include "costmodel/roofline_share.h"

using namespace dpro::costmodel;

namespace {
template <typename F>
double seconds(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
void emit(const char* bench, double value, const char* unit, const std::string& extra = "") {
  std::printf("{\"bench\": \"%s\", \"value\": %.1f, \"unit\": \"%s\"%s}\n", bench, value, unit, extra.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  reexec_with_fast_blas_if_needed(argv);
  const std::string model_path = argc > 1 ? argv[1] : default_model_path();
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const auto catalog = DeviceCatalog::load_directory(default_device_dir());
  const auto subset = load_measurements(test_subset_dir(), catalog);
  constexpr std::size_t kQueries = 100000;
  std::vector<PredictQuery> queries;
  const auto& devices = catalog.devices();
  for (std::size_t i = 0; i < kQueries; ++i)
    queries.push_back({&subset[i % subset.size()].op, &devices[i % devices.size()]});

  double sink = 0;
  const double roof_s = seconds([&] {
    for (const auto& q : queries) sink += roofline_ms(*q.op, *q.device);
  });
  emit("roofline_predictions_per_s", kQueries / roof_s, "1/s");
  {
    const ShareTable shares = load_share_table(default_shares_path());
    for (const auto& q : queries) sink += shares.kernel_ms(*q.op, *q.device).value_or(0);  // warm-up
    const double kernel_s = seconds([&] {
      for (const auto& q : queries) sink += shares.kernel_ms(*q.op, *q.device).value_or(0);
    });
    emit("share_kernel_predictions_per_s", kQueries / kernel_s, "1/s");
    const double latency_s = seconds([&] {
      for (const auto& q : queries) sink += shares.latency_ms(*q.op, *q.device).value_or(0);
    });
    emit("share_latency_predictions_per_s", kQueries / latency_s, "1/s");
  }

  if (!LearnedModel::available()) {
    std::printf("{\"bench\": \"learned_predictions_per_s\", \"value\": null, \"note\": \"no LibTorch\"}\n");
    return 0;
  }
  const std::string extra = ", \"threads\": " + std::to_string(threads) + ", \"batch\": 100000";
  LearnedModel::set_threads(threads);
  const auto model = LearnedModel::load(model_path);
  // Warm-up: a full pass (first-touch allocations of the feature and tensor buffers).
  model.predict_ms(queries);
  std::vector<double> out;
  const double full_s = seconds([&] { out = model.predict_ms(queries); });
  sink += out[0];
  emit("learned_predictions_per_s", kQueries / full_s, "1/s",
       extra + ", \"includes\": \"AST + features + network + residual memory\"");
  {
    // The same without the residual memory lookups (what they cost).
    auto bare = queries;
    for (auto& q : bare) q.use_memory = false;
    const double bare_s = seconds([&] { out = model.predict_ms(bare); });
    sink += out[0];
    emit("learned_predictions_without_memory_per_s", kQueries / bare_s, "1/s", extra);
  }
  std::vector<FeatureRow> rows(kQueries);
  const double feat_s = seconds([&] {
    for (std::size_t i = 0; i < kQueries; ++i)
      make_features(*queries[i].op, *queries[i].device, rows[i], queries[i].allow_kernel);
  });
  emit("ast_feature_rows_per_s", kQueries / feat_s, "1/s");
  const double net_s = seconds([&] { out = model.predict_ms(rows); });
  sink += out[0];
  emit("learned_network_predictions_per_s", kQueries / net_s, "1/s", extra);
  const double single_s = seconds([&] {
    for (int i = 0; i < 1000; ++i) sink += model.predict_ms(std::vector<PredictQuery>{queries[i]})[0];
  });
  emit("learned_single_prediction_latency", single_s / 1000 * 1e6, "us");
  return sink == 12345.678 ? 1 : 0;
}
