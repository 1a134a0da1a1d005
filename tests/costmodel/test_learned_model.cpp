#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "costmodel/compact_ast.h"
#include "costmodel/eval/evaluate.h"
#include "costmodel/kernel_time.h"
#include "costmodel/learned_model.h"
#include "costmodel/model_file.h"
#include "costmodel/paths.h"
#include "costmodel_fixtures.h"
#include "test_paths.h"

using namespace dpro::costmodel;
using dpro::test::catalog;
using dpro::test::make_op;

namespace {
const std::vector<Measurement>& subset() {
  static const auto d = load_measurements(test_subset_dir(), catalog());
  return d;
}
std::string shipped_model() { return dpro::test::source_path("data/costmodel/model.dpcm"); }
double mape(const LearnedModel& model, const std::vector<const Measurement*>& rows) {
  std::vector<PredictQuery> q;
  for (const auto* m : rows) q.push_back({&m->op, m->device});
  const auto p = model.predict_ms(q);
  double s = 0;
  for (size_t i = 0; i < rows.size(); ++i) s += std::abs(p[i] - rows[i]->latency_ms) / rows[i]->latency_ms;
  return 100 * s / static_cast<double>(rows.size());
}
void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
// The header line of a model file's bytes, and the bytes with another header line.
std::string header_line(const std::string& file) {
  const auto start = file.find('\n') + 1;
  return file.substr(start, file.find('\n', start) - start);
}
std::string with_header_line(const std::string& file, const std::string& line) {
  const auto start = file.find('\n') + 1;
  return file.substr(0, start) + line + file.substr(file.find('\n', start));
}
// The header's hash as the writer computes it (model_file.h): of its dump without the field.
void rehash(nlohmann::json& header) {
  header.erase("header_fnv1a");
  header["header_fnv1a"] = std::to_string(fnv1a(dpro::dump_output_json(header, -1)));
}
}  // namespace

TEST_CASE("shipped model predicts held-out subset rows within 15% MAPE") {
  const auto model = LearnedModel::load(shipped_model());
  std::vector<const Measurement*> test;
  for (const auto& m : subset())
    if (in_test_split(m, 0.2, 7)) test.push_back(&m);
  REQUIRE(test.size() > 100);
  const double e = mape(model, test);
  INFO("held-out MAPE " << e << "%; model: " << model.provenance());
  CHECK(e < 15.0);
}

TEST_CASE("corrupted model files fail with a clear InputError") {
  const std::string good = dpro::read_whole_file(shipped_model());
  const std::string path = dpro::test::binary_path("corrupt.dpcm");
  // Writes the good file with `what` (which must occur in it) replaced by `by`.
  // The header is re-hashed, when it is still JSON, so that the field checks are what fails.
  auto write_edited = [&](const std::string& what, const std::string& by) {
    std::string bad = good;
    const auto at = bad.find(what);
    REQUIRE(at != std::string::npos);
    bad.replace(at, what.size(), by);
    auto header = nlohmann::json::parse(header_line(bad), nullptr, false);
    if (!header.is_discarded()) {
      rehash(header);
      bad = with_header_line(bad, dpro::dump_output_json(header, -1));
    }
    write(path, bad);
  };
  // Loading the good file with its header edited by `edit` (then re-hashed when `hashed`) is an
  // InputError whose message contains `expected`.
  auto header_edit_fails = [&](const std::function<void(nlohmann::json&)>& edit, bool hashed,
                               const std::string& expected) {
    auto header = nlohmann::json::parse(header_line(good));
    edit(header);
    if (hashed) rehash(header);
    write(path, with_header_line(good, dpro::dump_output_json(header, -1)));
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains(path) && Catch::Contains(expected));
  };
  // Loading the good file edited so is an InputError whose message contains `expected`.
  auto edited_fails = [&](const std::string& what, const std::string& by, const std::string& expected) {
    write_edited(what, by);
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains(expected));
  };
  SECTION("flipped payload byte") {
    std::string bad = good;
    bad[bad.size() - 100] ^= 0x5a;
    write(path, bad);
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains("checksum"));
  }
  SECTION("truncated") {
    write(path, good.substr(0, good.size() / 2));
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains("truncated"));
  }
  SECTION("not a model") {
    write(path, "hello world\n");
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains("bad magic"));
  }
  SECTION("edited header") {
    edited_fails("\"version\":6", "\"version\":[", "corrupted cost model header");
  }
  SECTION("a model file of an older format") {
    write_edited("\"version\":6", "\"version\":4");
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains("version 4") && Catch::Contains("retrain"));
  }
  SECTION("a header figure edited (the header's hash no longer matches)") {
    // Each changed predictions with exit code 0 before the header had a hash of its own.
    header_edit_fails([](nlohmann::json& h) { h["unseen_floor_ms"]["bmm"] = h["unseen_floor_ms"]["bmm"].get<double>() + 0.01; },
                      false, "checksum mismatch");
    header_edit_fails([](nlohmann::json& h) { h["known_device_features"]["V100-PCIE-32GB"][0] = 9.9; }, false,
                      "checksum mismatch");
    header_edit_fails([](nlohmann::json& h) { h["known_devices"].push_back("L4"); }, false, "checksum mismatch");
    header_edit_fails([](nlohmann::json& h) { h["provenance"] = "mine"; }, false, "checksum mismatch");
    header_edit_fails([](nlohmann::json& h) { h.erase("header_fnv1a"); }, false, "header_fnv1a: corrupted cost model header: missing");
  }
  SECTION("a field the predictions need is missing or out of range") {
    for (const char* field : {"unseen_floor_ms", "measurement_overhead_ms", "known_device_features", "known_devices"}) {
      INFO(field);
      header_edit_fails([&](nlohmann::json& h) { h.erase(field); }, true, std::string(field) + ": corrupted cost model header: missing");
    }
    header_edit_fails([](nlohmann::json& h) { h["unseen_floor_ms"]["bmm"] = 0; }, true, "unseen_floor_ms.bmm");
    header_edit_fails([](nlohmann::json& h) { h["unseen_floor_ms"]["bmm"] = 1500.0; }, true, "from 1e-6 to 1000 ms, got 1500.0");
    header_edit_fails([](nlohmann::json& h) { h["measurement_overhead_ms"]["V100-PCIE-32GB"] = 5000.0; }, true,
                      "measurement_overhead_ms.V100-PCIE-32GB");
    header_edit_fails([](nlohmann::json& h) { h["known_devices"].push_back("L4"); }, true, "known_device_features: corrupted cost model header: missing for L4");
    header_edit_fails([](nlohmann::json& h) { h["known_device_features"]["L4"] = h["known_device_features"]["T4"]; }, true,
                      "known_device_features.L4: corrupted cost model header: not one of known_devices");
  }
  SECTION("a version 5 file, written before the header hash, loads with the same predictions") {
    auto header = nlohmann::json::parse(header_line(good));
    header.erase("header_fnv1a");
    header["version"] = 5;
    write(path, with_header_line(good, dpro::dump_output_json(header, -1)));
    const auto legacy = LearnedModel::load(path), shipped = LearnedModel::load(shipped_model());
    const auto& l4 = catalog().get("L4");
    const auto& t4 = catalog().get("T4");
    const OpDesc bmm = make_op(OpFamily::kBmm, {8, 256, 256, 256}), relu = make_op(OpFamily::kRelu, {1, 32});
    const std::vector<PredictQuery> q = {{&bmm, &l4}, {&bmm, &t4}, {&relu, &l4}, {&relu, &t4}};
    CHECK(legacy.predict_ms(q) == shipped.predict_ms(q));
    CHECK(legacy.measurement_overhead_ms(l4, true) == shipped.measurement_overhead_ms(l4, true));
    // Its fields are checked all the same.
    header["unseen_floor_ms"]["bmm"] = 0;
    write(path, with_header_line(good, dpro::dump_output_json(header, -1)));
    REQUIRE_THROWS_WITH(LearnedModel::load(path), Catch::Contains("unseen_floor_ms.bmm"));
  }
  SECTION("a directory") {
    const std::string dir = dpro::test::binary_path("a_model_dir.dpcm");
    std::filesystem::create_directories(dir);
    REQUIRE_THROWS_WITH(LearnedModel::load(dir), Catch::Contains(dir + ": is a directory, expected a cost model file"));
  }
  SECTION("section sizes that do not add up") {
    edited_fails("\"memory_plain_bytes\":", "\"memory_plain_bytes\":1", "section sizes");
  }
  SECTION("a bad floor") {
    edited_fails("\"unseen_floor_ms\":{\"add\":", "\"unseen_floor_ms\":{\"add\":-", "unseen_floor_ms.add: corrupted");
    edited_fails("\"unseen_floor_ms\":{\"add\":", "\"unseen_floor_ms\":{\"xyz\":", "unseen_floor_ms.xyz: corrupted");
  }
  SECTION("a bad measurement overhead") {
    const std::string overheads = "\"measurement_overhead_ms\":{\"A100-PCIE-40GB\":";
    edited_fails(overheads, overheads + "-", "measurement_overhead_ms.A100-PCIE-40GB: corrupted");
    edited_fails(overheads, "\"measurement_overhead_ms\":{\"H100\":1,\"A100-PCIE-40GB\":",
                 "measurement_overhead_ms.H100: corrupted cost model header: not one of known_devices");
  }
  SECTION("bad device figures") {
    const std::string features = "\"known_device_features\":{\"A100-PCIE-40GB\":[";
    edited_fails(features, features + "1,", "known_device_features.A100-PCIE-40GB: corrupted cost model header: must be a list of 7 numbers");
    edited_fails(features, features + "\"x\",", "corrupted cost model header");
  }
  SECTION("layer widths out of range, or not those of the weights") {
    edited_fails("\"head_hidden\":192", "\"head_hidden\":0", "head_hidden: must be a whole number from 1 to 4096, got 0");
    edited_fails("\"token_hidden\":64", "\"token_hidden\":2147483647", "token_hidden: must be a whole number from 1 to 4096");
    edited_fails("\"head_hidden\":192", "\"head_hidden\":128", "do not match the header's layer widths");
  }
  SECTION("another format, an absurd floor, absurd device figures") {
    edited_fails("\"format\":\"dpro-costmodel\"", "\"format\":\"onnx\"", "not a dpro cost model file");
    edited_fails("\"unseen_floor_ms\":{\"add\":", "\"unseen_floor_ms\":{\"add\":1e300,\"x\":", "unseen_floor_ms.add: corrupted");
    const std::string features = "\"known_device_features\":{\"A100-PCIE-40GB\":[";
    edited_fails(features, features + "1e300,", "must be a list of 7 numbers");
    edited_fails(features + "10.602699279785156", features + "1e30", "known_device_features.A100-PCIE-40GB: corrupted cost model header: a device feature out of range");
  }
  SECTION("missing file") {
    REQUIRE_THROWS_AS(LearnedModel::load(path + ".none"), dpro::InputError);
  }
}

TEST_CASE("ops the model cannot describe are NaN / nullopt, so callers fall back") {
  const auto model = LearnedModel::load(shipped_model());
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  OpDesc unknown;
  unknown.name = "aten::index_select";
  OpDesc bmm = make_op(OpFamily::kBmm, {8, 256, 256, 256});
  const auto p = model.predict_ms({{&unknown, &h100}, {&bmm, &h100}});
  CHECK(std::isnan(p[0]));
  CHECK(p[1] > 0);
  LearnedCostModel cm(model);
  CHECK_FALSE(cm.predict(unknown, h100).has_value());
  REQUIRE(cm.predict(bmm, h100).has_value());
  // Faster GPU, same op: a bandwidth-bound op is predicted faster on H100 than on T4.
  OpDesc add = make_op(OpFamily::kAdd, {8192, 8192});
  const auto& t4 = catalog().get("T4");
  CHECK(*cm.predict(add, h100) < *cm.predict(add, t4));
}

TEST_CASE("training on the subset learns, and save/load round-trips exactly") {
  dpro::Logger log(dpro::LogLevel::kQuiet);
  std::vector<const Measurement*> rows;
  for (const auto& m : subset()) rows.push_back(&m);
  TrainOptions opt;
  opt.epochs = 1;
  opt.batch_size = 128;
  auto barely = LearnedModel::train(rows, opt, log);
  opt.epochs = 40;
  auto trained = LearnedModel::train(rows, opt, log);
  const double e1 = mape(barely, rows), e40 = mape(trained, rows);
  INFO("1 epoch " << e1 << "%, 40 epochs " << e40 << "%");
  CHECK(e40 < e1);
  CHECK(e40 < 30.0);
  const std::string path = dpro::test::binary_path("roundtrip.dpcm");
  trained.save(path, /*replace=*/true);  // a rerun of the test finds the last run's file
  const auto loaded = LearnedModel::load(path);
  // Written as version 6: the header carries its own hash.
  const auto header = nlohmann::json::parse(header_line(dpro::read_whole_file(path)));
  CHECK(header.at("version") == 6);
  CHECK(header.at("header_fnv1a").is_string());
  OpDesc op = make_op(OpFamily::kConv2d, {8, 64, 64, 3, 56, 1, 1});
  const auto& a100 = catalog().get("A100-SXM4-80GB");
  CHECK(loaded.predict_ms({{&op, &a100}})[0] == Approx(trained.predict_ms({{&op, &a100}})[0]).epsilon(1e-6));
  // The residual memory travels with the file: a trained conv configuration on a GPU.
  const Measurement* conv = nullptr;
  for (const auto* m : rows)
    if (m->op.family == OpFamily::kConv2d) conv = m;
  REQUIRE(conv != nullptr);
  PredictQuery with{&conv->op, &a100}, without{&conv->op, &a100, true, false, false};
  CHECK(loaded.predict_ms({with})[0] == Approx(trained.predict_ms({with})[0]).epsilon(1e-6));
  CHECK(loaded.predict_ms({without})[0] == Approx(trained.predict_ms({without})[0]).epsilon(1e-6));
  // GPUs outside the training data are priced by the separate, less fitted network: a model
  // without it prices the known GPUs identically and the unknown ones differently.
  CHECK(trained.provenance().find("unseen-GPU network 10 epochs") != std::string::npos);
  opt.unseen_epochs = 0;
  const auto single = LearnedModel::train(rows, opt, log);
  CHECK(single.provenance().find("unseen-GPU network the same") != std::string::npos);
  const auto& t4 = catalog().get("T4");
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  REQUIRE(trained.knows_device(t4));
  REQUIRE_FALSE(trained.knows_device(h100));
  CHECK(single.predict_ms({{&op, &t4}})[0] == Approx(trained.predict_ms({{&op, &t4}})[0]).epsilon(1e-9));
  OpDesc large = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});  // far above the floor guard
  // Another network: not equal to within 1e-6, where the same network gave 1e-9 above (two
  // networks of 10 and 40 epochs came within 0.09 % of each other on an AMD EPYC, so no wider).
  CHECK(single.predict_ms({{&large, &h100}})[0] != Approx(trained.predict_ms({{&large, &h100}})[0]).epsilon(1e-6));
  // ... and a known GPU priced as unseen (allow_identity off) goes through it too.
  PredictQuery t4_unseen{&large, &t4, false};
  CHECK(single.predict_ms({t4_unseen})[0] != Approx(trained.predict_ms({t4_unseen})[0]).epsilon(1e-6));

  // A GPU with the same datasheet figures as a trained one is priced as that GPU (the file
  // keeps the figures): a twin. One of the same chip (SMs, cores per SM) with other figures is
  // priced with the closest such GPU's identity and its own figures: a sibling (the 80 GB
  // SXM4: more bandwidth than the 80 GB PCIe card, which the subset has for conv).
  const auto& sxm40 = catalog().get("A100-SXM4-40GB");
  const auto& pcie40 = catalog().get("A100-PCIE-40GB");
  CHECK(loaded.pricing_of(pcie40).kind == DevicePricing::kTrained);
  CHECK(loaded.pricing_of(sxm40).as == "A100-PCIE-40GB");
  CHECK(loaded.pricing_of(sxm40).kind == DevicePricing::kTwin);
  CHECK(loaded.pricing_of(a100).as == "A100-PCIE-80GB");
  CHECK(loaded.pricing_of(a100).kind == DevicePricing::kSibling);
  CHECK(loaded.pricing_of(h100).kind == DevicePricing::kUnseen);
  CHECK(loaded.predict_ms({{&op, &sxm40}})[0] == loaded.predict_ms({{&op, &pcie40}})[0]);
  CHECK(pricing_note(loaded, a100).find("identity of A100-PCIE-80GB, the same chip") != std::string::npos);

  // The floor guard: per family the fastest latency measured on any GPU, kept by the file; an
  // unseen GPU is never priced below it.
  double fastest_relu = 1e9;
  for (const auto* m : rows)
    if (m->op.family == OpFamily::kRelu) fastest_relu = std::min(fastest_relu, m->latency_ms);
  CHECK(trained.unseen_floor_ms(OpFamily::kRelu) == fastest_relu);
  CHECK(loaded.unseen_floor_ms(OpFamily::kRelu) == fastest_relu);
  CHECK(loaded.unseen_floor_ms(OpFamily::kUnknown) == 0.0);
  // The measurement overheads (kernel_time.h) of the training GPUs, kept by the file: a GPU
  // priced with an identity gets that GPU's, any other (or without identity) their median.
  const auto overheads = measurement_overheads_ms(rows);
  REQUIRE(overheads.count("T4"));
  CHECK(trained.measurement_overhead_ms(t4, true) == overheads.at("T4"));
  CHECK(loaded.measurement_overhead_ms(t4, true) == overheads.at("T4"));
  CHECK(loaded.measurement_overhead_ms(t4, false) == typical_overhead_ms(overheads));
  CHECK(loaded.measurement_overhead_ms(h100, true) == typical_overhead_ms(overheads));
  CHECK(loaded.measurement_overhead_ms(t4, false) > 0.01);
  OpDesc tiny = make_op(OpFamily::kRelu, {1, 32});
  const auto& l4 = catalog().get("L4");
  CHECK(loaded.predict_ms({{&tiny, &l4}})[0] >= fastest_relu);
  CHECK(loaded.predict_ms({{&tiny, &h100}})[0] >= fastest_relu);

  // Samples of an adapted GPU lower its floor where they are faster.
  std::vector<Measurement> fast;
  for (const auto* m : rows)
    if (m->op.family == OpFamily::kRelu && m->device == &t4) {
      fast.push_back(*m);
      fast.back().device = &l4;
      fast.back().latency_ms = m->latency_ms / 3;
    }
  REQUIRE(!fast.empty());
  std::vector<const Measurement*> fast_ptrs;
  double fastest_sample = 1e9;
  for (const auto& m : fast) {
    fast_ptrs.push_back(&m);
    fastest_sample = std::min(fastest_sample, m.latency_ms);
  }
  FewShotOptions few;
  few.epochs = 1;
  few.replay_rows = 200;
  auto adapted = LearnedModel::load(path);
  REQUIRE_THROWS_WITH(adapted.fine_tune({}, rows, few, log), Catch::Contains("no samples"));
  adapted.fine_tune(fast_ptrs, rows, few, log);
  CHECK(adapted.unseen_floor_ms(OpFamily::kRelu) == fastest_sample);
  CHECK(adapted.unseen_floor_ms(OpFamily::kTanh) == loaded.unseen_floor_ms(OpFamily::kTanh));
}

TEST_CASE("a sibling GPU follows its own figures: V100 SXM2 against the trained V100 PCIe") {
  // The same GV100 chip; the SXM2 board's boost clock is 11 % higher (fp32 peak 15.7 against
  // 14.0 TFLOP/s), its bandwidth the same 900 GB/s.
  const auto model = LearnedModel::load(shipped_model());
  const auto& pcie = catalog().get("V100-PCIE-32GB");
  const auto& sxm2 = catalog().get("V100-SXM2-32GB");
  REQUIRE(model.pricing_of(sxm2).as == "V100-PCIE-32GB");
  REQUIRE(model.pricing_of(sxm2).kind == DevicePricing::kSibling);
  OpDesc gemm = make_op(OpFamily::kBmm, {64, 1024, 1024, 1024});  // compute-bound
  OpDesc add = make_op(OpFamily::kAdd, {8192, 8192});             // bandwidth-bound
  const auto p = model.predict_ms({{&gemm, &pcie}, {&gemm, &sxm2}, {&add, &pcie}, {&add, &sxm2}});
  INFO("bmm " << p[0] << " -> " << p[1] << " ms, add " << p[2] << " -> " << p[3] << " ms");
  CHECK(p[1] / p[0] > 14.0 / 15.7 - 0.03);
  CHECK(p[1] / p[0] < 0.97);
  CHECK(p[3] / p[2] == Approx(1.0).margin(0.03));
}

TEST_CASE("a recorded kernel is used only for a GPU the model prices with its identity") {
  // On a GPU outside the data the kernel features made the unseen-GPU network worse (held-out
  // V100, docs/costmodel.md): a row measured there is priced as if its kernel were not given.
  const auto model = LearnedModel::load(shipped_model());
  const Measurement* t4_bmm = nullptr;
  for (const auto& m : subset())
    if (m.op.family == OpFamily::kBmm && m.device->name == "T4" && !m.op.kernel_name.empty()) t4_bmm = &m;
  REQUIRE(t4_bmm != nullptr);
  const auto& t4 = *t4_bmm->device;
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  const auto p = model.predict_ms({{&t4_bmm->op, &t4, true, true},
                                   {&t4_bmm->op, &t4, true, false},
                                   {&t4_bmm->op, &h100, true, true},
                                   {&t4_bmm->op, &h100, true, false}});
  // Rows of one batch may differ in the last bits by their position (the BLAS kernel a CPU
  // picks for a remainder of rows: 3e-8 apart on an AMD EPYC), hence 1e-6, not ==.
  CHECK(p[0] != Approx(p[1]).epsilon(1e-6));
  CHECK(p[2] == Approx(p[3]).epsilon(1e-6));
}

TEST_CASE("the floor guard lifts a GPU outside the data to the training GPUs' floor") {
  // L4 (48 MB of L2, 2 GHz: outside the training GPUs' figures) is where the unseen-GPU
  // network, unguarded, prices a tiny op below every training GPU's floor (25-50 us).
  const std::string good = dpro::read_whole_file(shipped_model());
  const std::string path = dpro::test::binary_path("unguarded.dpcm");
  auto header = nlohmann::json::parse(header_line(good));
  header["unseen_floor_ms"] = nlohmann::json::object();  // a model without the guard
  rehash(header);
  write(path, with_header_line(good, dpro::dump_output_json(header, -1)));
  const auto guarded_model = LearnedModel::load(shipped_model());
  const auto old_model = LearnedModel::load(path);
  OpDesc tiny = make_op(OpFamily::kRelu, {1, 256});
  const auto& l4 = catalog().get("L4");
  const double floor = guarded_model.unseen_floor_ms(OpFamily::kRelu);
  INFO("relu floor " << floor << " ms");
  CHECK(floor > 0.02);
  CHECK(floor < 0.04);
  CHECK(old_model.unseen_floor_ms(OpFamily::kRelu) == 0.0);
  CHECK(old_model.predict_ms({{&tiny, &l4}})[0] < floor);
  CHECK(guarded_model.predict_ms({{&tiny, &l4}})[0] == floor);
  // A large op is far above the floor: the guard leaves it alone.
  OpDesc large = make_op(OpFamily::kRelu, {8192, 8192});
  CHECK(guarded_model.predict_ms({{&large, &l4}})[0] == old_model.predict_ms({{&large, &l4}})[0]);
  // GPUs of the data are not guarded.
  const auto& t4 = catalog().get("T4");
  CHECK(guarded_model.predict_ms({{&tiny, &t4}})[0] == old_model.predict_ms({{&tiny, &t4}})[0]);
}

TEST_CASE("the residual memory carries a configuration's measurements on other GPUs to a held-out row") {
  const auto model = LearnedModel::load(shipped_model());
  // Test-side conv rows of the split: each configuration's other GPUs are (mostly) training rows.
  std::vector<PredictQuery> with, without;
  std::vector<double> measured;
  for (const auto& m : subset())
    if (m.op.family == OpFamily::kConv2d && in_test_split(m, 0.2, 7)) {
      with.push_back({&m.op, m.device});
      without.push_back({&m.op, m.device, true, false, false});
      measured.push_back(m.latency_ms);
    }
  REQUIRE(measured.size() >= 20);
  const auto a = model.predict_ms(with), b = model.predict_ms(without);
  double ea = 0, eb = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ea += std::abs(a[i] / measured[i] - 1);
    eb += std::abs(b[i] / measured[i] - 1);
  }
  INFO(measured.size() << " rows: MAPE with memory " << 100 * ea / measured.size() << "%, without "
                       << 100 * eb / measured.size() << "%");
  CHECK(ea < 0.8 * eb);
}

TEST_CASE("fused ops are priced from their multi-store tree") {
  const auto model = LearnedModel::load(shipped_model());
  const auto& v100 = catalog().get("V100-PCIE-32GB");
  OpDesc ln = make_op(OpFamily::kLayerNorm, {4096, 1024});
  OpDesc gelu = make_op(OpFamily::kGelu, {4096, 1024});
  const auto fused = fuse({*build_ast(ln), *build_ast(gelu)});
  FeatureRow row;
  REQUIRE(make_features(fused, ln, v100, row));
  const double ms = model.predict_ms(std::vector<FeatureRow>{row})[0];
  CHECK(std::isfinite(ms));
  CHECK(ms > 0);
}

TEST_CASE("a recorded kernel is used only on the GPU it ran on") {
  const auto model = LearnedModel::load(shipped_model());
  const auto& t4 = catalog().get("T4");
  const auto& h100 = catalog().get("H100-SXM5-80GB");
  const Measurement* conv = nullptr;
  for (const auto& m : subset())
    if (m.op.family == OpFamily::kConv2d && m.device == &t4 && !m.op.kernel_list.empty()) { conv = &m; break; }
  REQUIRE(conv != nullptr);
  OpDesc bare = conv->op;
  bare.kernel_name.clear();
  bare.kernel_list.clear();
  bare.grid.reset();
  bare.block.reset();
  // Default queries (a what-if on another GPU) ignore the kernel: same as an op without one.
  const auto p = model.predict_ms({{&conv->op, &h100}, {&bare, &h100}, {&conv->op, &t4, true, true}, {&bare, &t4}});
  CHECK(p[0] == Approx(p[1]).epsilon(1e-6));  // 1e-6: rows of one batch, as above
  // Asked for on its own GPU, the kernel features change the prediction.
  CHECK(p[2] != Approx(p[3]).epsilon(1e-6));
}
