#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>

#include "comm_fixtures.h"
#include "core/byte_source.h"
#include "core/error.h"
#include "replayer/replay.h"
#include "flag_whatif.h"

using namespace dpro;

namespace {

std::unique_ptr<test::FlagWhatIf> parsed(std::vector<std::string> args) {
  args.push_back("--clusters-dir");
  args.push_back(test::clusters_dir());
  return std::make_unique<test::FlagWhatIf>(std::move(args));
}

// Applies the what-if to a copy of the job's graph and replays it like `dpro-replay replay`.
struct Outcome {
  graph::BuiltGraph graph;
  replayer::Report report;
  std::string summary;
  nlohmann::json details;
};

Outcome run(const test::LoadedJob& job, std::vector<std::string> args) {
  auto w = parsed(std::move(args));
  REQUIRE(w->enabled());
  Logger quiet(LogLevel::kQuiet);
  Outcome o{job.built, {}, {}, {}};
  w->apply(o.graph, job.traces, quiet);
  if (!o.graph.dfg.finalized()) o.graph.dfg.finalize();
  const auto sim = replayer::simulate(o.graph.dfg);
  o.report = replayer::make_report(job.traces, o.graph, sim, replayer::ReportOptions{});
  o.summary = w->summary();
  o.details = w->details();
  return o;
}

Nanos job_time(const replayer::Report& r) { return r.iterations.at(0).job_predicted_ns; }

std::vector<std::string> with_sizes(std::vector<std::string> args) {
  args.push_back("--comm-sizes");
  args.push_back(test::dlrm_host_et_dir());
  return args;
}

}  // namespace

TEST_CASE("without flags the what-if is off") {
  CHECK_FALSE(parsed({})->enabled());
}

TEST_CASE("the what-if with --ranks and the trace's own world size and cluster reproduces the plain replay") {
  const auto job = test::load_dlrm();
  const Nanos base = job_time(run(job, with_sizes({"--ranks", "8"})).report);
  Logger quiet(LogLevel::kQuiet);
  const Nanos plain = replayer::replay_traces(job.traces, {}, quiet).report.iterations.at(0).job_predicted_ns;
  CHECK(std::abs(base - plain) <= plain / 100);
}

TEST_CASE("the what-if with --ranks 2 on the partial A100 trace reproduces its plain replay") {
  const auto job = test::load_a100();
  const auto o = run(job, {"--ranks", "2"});
  Logger quiet(LogLevel::kQuiet);
  const auto plain = replayer::replay_traces(job.traces, {}, quiet).report;
  REQUIRE(o.report.iterations.size() == plain.iterations.size());
  for (std::size_t i = 0; i < plain.iterations.size(); ++i) {
    const Nanos p = plain.iterations[i].job_predicted_ns;
    CHECK(std::abs(o.report.iterations[i].job_predicted_ns - p) <= p / 100);
  }
}

TEST_CASE("a faster network makes the communication faster and a slower one slower") {
  const auto job = test::load_dlrm();
  const auto fast = run(job, with_sizes({"--set", "network.intra_node_gbps=600"}));
  const auto slow = run(job, with_sizes({"--set", "network.intra_node_gbps=15"}));
  CHECK(fast.summary.find("dgx1-v100 (guessed") != std::string::npos);
  CHECK(fast.summary.find("network.intra_node_gbps=600") != std::string::npos);
  CHECK(fast.summary.find("64 sized by the trace, 0 by host execution traces") != std::string::npos);
  Nanos fast_comm = 0, slow_comm = 0, measured = 0;
  for (const auto& n : fast.graph.dfg.nodes())
    if (n.kind == graph::NodeKind::kCollective) fast_comm += n.duration;
  for (const auto& n : slow.graph.dfg.nodes())
    if (n.kind == graph::NodeKind::kCollective) slow_comm += n.duration;
  for (const auto& n : job.built.dfg.nodes())
    if (n.kind == graph::NodeKind::kCollective) measured += n.duration;
  CHECK(fast_comm < measured);
  CHECK(slow_comm > measured);
  CHECK(job_time(slow.report) >= job_time(fast.report));
}

TEST_CASE("the what-if with --cluster re-times the A100 trace for an H100 system with sizes from the trace") {
  const auto job = test::load_a100();
  const auto o = run(job, {"--cluster", "dgx-h100"});
  CHECK(o.summary.find("dgx-a100 (guessed from the trace's GPUs) -> dgx-h100") != std::string::npos);
  CHECK(o.summary.find("21 NCCL ops re-timed (21 sized by the trace") != std::string::npos);
  Nanos before = 0, after = 0;
  for (const graph::NodeId id : job.built.dfg.node_ids()) {
    if (job.built.dfg.node(id).kind != graph::NodeKind::kCollective) continue;
    before += job.built.dfg.node(id).duration;
    after += o.graph.dfg.node(id).duration;
  }
  CHECK(after < before);
}

TEST_CASE("the what-if with --ranks scales DLRM out and rejects rank counts that do not fill nodes") {
  const auto job = test::load_dlrm();
  const auto o = run(job, with_sizes({"--ranks", "1024"}));
  CHECK(o.summary.find("Ranks 8 -> 1024 (128 node(s) x 8)") != std::string::npos);
  CHECK(o.summary.find("exact by symmetry") != std::string::npos);
  CHECK(job_time(o.report) > 0);
  auto bad = parsed(with_sizes({"--ranks", "20"}));
  graph::BuiltGraph g = job.built;
  Logger quiet(LogLevel::kQuiet);
  REQUIRE_THROWS_WITH(bad->apply(g, job.traces, quiet), Catch::Contains("ranks 20") && Catch::Contains("whole nodes"));
}

TEST_CASE("the what-if with --ranks below the trace's world size reports the smaller job from its expanded graph") {
  const auto job = test::load_dlrm();
  const auto o = run(job, with_sizes({"--ranks", "4"}));
  CHECK(o.summary.find("Trace ranks 4..7 are not part of the 4-rank job") != std::string::npos);
  CHECK(o.summary.find("its rows and job row are the 4-rank job") != std::string::npos);
  // The report made from the rewritten graph lists ranks 0..3 only: its job row is the 4-rank job.
  REQUIRE(o.report.iterations.size() == 1);
  std::vector<int> ranks;
  for (const auto& r : o.report.iterations[0].ranks) ranks.push_back(r.rank);
  CHECK(ranks == std::vector<int>{0, 1, 2, 3});
  const Nanos eight = job_time(run(job, with_sizes({"--ranks", "8"})).report);
  CHECK(job_time(o.report) < eight);
  // The same in replay --json (whatif.changes.communication.ranks).
  const auto& r = o.details.at("ranks");
  CHECK(r.at("to") == 4);
  CHECK(r.at("scaled_in") == true);
  CHECK(r.at("exact_by_symmetry") == false);
  CHECK(r.at("missing_ranks_stood_in") == false);
}

TEST_CASE("Scale-out of a partial set: --ranks says the missing ranks are stood in for, not that it is exact") {
  const auto files = test::dlrm_files();
  const auto job = test::load_job({files[0], files[1], files[2]}, true);  // --allow-partial, 3 of 8 files
  REQUIRE(comm::world_size(job.traces) == 8);
  const auto o = run(job, {"--ranks", "8"});
  CHECK(o.summary.find("The trace has 3 of the job's 8 ranks (0..2): the missing ranks are stood in for by the "
                       "present ones") != std::string::npos);
  CHECK(o.summary.find("exact by symmetry") == std::string::npos);
  CHECK(o.details.at("ranks").at("exact_by_symmetry") == false);
  CHECK(o.details.at("ranks").at("missing_ranks_stood_in") == true);
}

TEST_CASE("a trace without NCCL ops needs no cluster: an unknown GPU is no error for --ranks") {
  auto job = test::load_a100();
  // The cuda-event-sync trace has no collectives; give it a GPU no cluster file names.
  auto single = test::load_job({test::source_path("traces/hta/cuda-event-sync.json.gz")});
  for (auto& r : single.traces.ranks)
    for (auto& d : r.devices) d.name = "Mystery GPU 9000";
  const auto o = run(single, {"--ranks", "2"});
  CHECK(o.summary.find("cluster unknown") != std::string::npos);
  CHECK(o.details.at("origin_cluster").is_null());
  CHECK(o.details.at("ranks").at("nodes").is_null());
  CHECK(job_time(o.report) > 0);
  // With --cluster that one is taken; NCCL ops and an unknown GPU stay an error.
  CHECK(run(single, {"--ranks", "2", "--cluster", "dgx-a100"}).details.at("origin_cluster") == "dgx-a100");
  for (auto& r : job.traces.ranks)
    for (auto& d : r.devices) d.name = "Mystery GPU 9000";
  Logger quiet(LogLevel::kQuiet);
  graph::BuiltGraph g = job.built;
  REQUIRE_THROWS_WITH(parsed({"--ranks", "2"})->apply(g, job.traces, quiet), Catch::Contains("--origin-cluster"));
}

TEST_CASE("the what-if with --bucket-mb fuses DLRM's three all-reduces into one bucket") {
  const auto job = test::load_dlrm();
  const auto o = run(job, with_sizes({"--bucket-mb", "25"}));
  CHECK(o.summary.find("3 all-reduces per rank -> 1 bucket,") != std::string::npos);
  std::size_t zero = 0, nonzero = 0;
  for (const auto& n : o.graph.dfg.nodes()) {
    if (n.kind != graph::NodeKind::kCollective) continue;
    if (std::string(job.traces.strings.view(n.name)).find("AllReduce") == std::string::npos) continue;
    (n.duration == 0 ? zero : nonzero) += 1;
  }
  CHECK(zero == 16);
  CHECK(nonzero == 8);
  const auto tiny = run(job, with_sizes({"--bucket-mb", "0.0001"}));
  CHECK(tiny.summary.find("3 all-reduces per rank -> 3 buckets") != std::string::npos);
}

TEST_CASE("bad what-if values are clear errors") {
  const auto job = test::load_dlrm();
  Logger quiet(LogLevel::kQuiet);
  graph::BuiltGraph g = job.built;
  REQUIRE_THROWS_WITH(parsed({"--cluster", "dgx-z9"})->apply(g, job.traces, quiet), Catch::Contains("unknown cluster"));
  REQUIRE_THROWS_WITH(parsed({"--set", "network.inter_node_gbps=-1"})->apply(g, job.traces, quiet),
                      Catch::Contains("from 0.001 to 1e6 GB/s"));
  REQUIRE_THROWS_WITH(parsed({"--bucket-mb", "0"})->apply(g, job.traces, quiet), Catch::Contains("--bucket-mb"));
  // Before, 1e20 MB said "must be positive"; the bound is stated.
  // 1e-300 passed "positive" and then failed as 0 bytes, "must be positive".
  for (const char* bad : {"1e20", "1048577", "inf", "1e-300", "nan"})
    REQUIRE_THROWS_WITH(parsed({"--bucket-mb", bad})->apply(g, job.traces, quiet),
                        Catch::Contains("--bucket-mb") && Catch::Contains("from 1 byte (1/1048576 MB) to 1048576 MB (1 TiB)"));
  // --origin-cluster names itself (before: "--cluster nonexist").
  REQUIRE_THROWS_WITH(parsed({"--cluster", "dgx-a100", "--origin-cluster", "nonexist"})->apply(g, job.traces, quiet),
                      Catch::Contains("--origin-cluster nonexist: unknown cluster") && !Catch::Contains("--cluster "));
  // Before, --ranks took up to 2^31 - 1, where a trace's ranks and groups stop at 2^20.
  for (const char* bad : {"0", "-8", "1048584", "2147483640"})
    REQUIRE_THROWS_WITH(parsed({"--ranks", bad})->apply(g, job.traces, quiet),
                        Catch::Contains("--ranks") && Catch::Contains("from 1 to 2^20") && Catch::Contains(bad));
  auto unknown = test::load_dlrm();
  for (auto& r : unknown.traces.ranks)
    for (auto& d : r.devices) d.name = "Mystery GPU 9000";
  REQUIRE_THROWS_WITH(parsed({"--ranks", "16"})->apply(g, unknown.traces, quiet),
                      Catch::Contains("--origin-cluster") && Catch::Contains("GPU 'Mystery GPU 9000'") &&
                          Catch::Contains("dgx-a100, dgx-h100"));
  // A trace without device properties says so (before: "GPU ''").
  for (auto& r : unknown.traces.ranks) r.devices.clear();
  REQUIRE_THROWS_WITH(parsed({"--ranks", "16"})->apply(g, unknown.traces, quiet),
                      Catch::Contains("records no GPU model") && Catch::Contains("dgx1-v100"));
}

TEST_CASE("the what-if's --set is repeatable and takes one value per occurrence") {
  cli::WhatIfFlags w;
  CLI::App app{"replay"};
  std::vector<std::string> traces;
  app.add_option("traces", traces);
  w.add_to(app);
  app.parse(std::vector<std::string>{"trace.json", "network.intra_node_gbps=600", "--set",
                                     "network.inter_node_gbps=50", "--set"});
  CHECK(traces == std::vector<std::string>{"trace.json"});
  CHECK(w.comm_enabled());
}

TEST_CASE("message and group sizes beyond any job are errors naming the kernel, not overflows") {
  // Found by tools/fuzz_cli.py comm: an 'In msg nelems' of -1 stopped the run on an internal
  // check, one of 2^62 overflowed the byte count (UBSan).
  for (std::int64_t bad : {std::int64_t{-1}, std::int64_t{1} << 62, comm::kMaxMessageBytes / 4 + 1}) {
    INFO(bad);
    auto job = test::load_a100();
    for (auto& a : job.traces.ranks[0].attrs)
      if (a.collective && a.collective->in_nelems) a.collective->in_nelems = bad;
    REQUIRE_THROWS_WITH(comm::find_comm_ops(job.built.dfg, job.traces),
                        Catch::Contains("a100-ws2-rank0") && Catch::Contains("NCCL kernel") &&
                            Catch::Contains("In msg nelems") && Catch::Contains("not a message size"));
  }
  auto ok = test::load_a100();
  for (auto& a : ok.traces.ranks[0].attrs)
    if (a.collective && a.collective->in_nelems) a.collective->in_nelems = comm::kMaxMessageBytes / 8;  // Float and Long
  CHECK_NOTHROW(comm::find_comm_ops(ok.built.dfg, ok.traces));
  for (int bad : {0, -3, 1 << 21}) {
    INFO(bad);
    auto job = test::load_a100();
    for (auto& a : job.traces.ranks[0].attrs)
      if (a.collective) {
        a.collective->group_ranks.clear();
        a.collective->group_size = bad;
      }
    REQUIRE_THROWS_WITH(comm::find_comm_ops(job.built.dfg, job.traces),
                        Catch::Contains("NCCL kernel") && Catch::Contains("not from 1 to 2^20"));
  }
}

TEST_CASE("a malformed host execution trace is an error naming the file and the node") {
  const std::string dir = test::fresh_dir("bad_host_et");
  auto write_et = [&](const std::string& nodes) {
    const std::string file = dir + "/rank0.json";
    test::write_text(file, R"({"schema": "1.0.1", "nodes": )" + nodes + "}");
    return file;
  };
  const std::string tensor = R"([718, 715, 0, NELEMS, SIZE, "cuda:0"])";
  auto nccl_node = [&](const std::string& nelems, const std::string& size) {
    std::string t = tensor;
    t.replace(t.find("NELEMS"), 6, nelems);
    t.replace(t.find("SIZE"), 4, size);
    return R"([{"name": "nccl:all_reduce", "id": 5, "inputs": [)" + t + "]}]";
  };
  // The good case: 6144 x 4 bytes.
  const auto good = trace::load_host_et_comms(write_et(nccl_node("6144", "4")));
  REQUIRE(good.size() == 1);
  CHECK(good[0].op == "all_reduce");
  CHECK(good[0].bytes == 24576);
  // Before, each of these aborted on a JSON type error, overflowed, or gave a size of 0 or below.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {nccl_node("-1", "4"), "element count"},
      {nccl_node("\"x\"", "4"), "element count"},
      {nccl_node("6144", "0"), "element size"},
      {nccl_node("4611686018427387904", "4"), "2^40"},
      {R"([{"name": "nccl:all_reduce", "id": "five", "inputs": []}])", "\"id\" is not an integer"},
      {R"([{"name": 7}])", "\"name\" is not a string"},
      {R"([{"name": "aten::add"}, 3])", "nodes[1]"},
      {R"({"a": 1})", "no \"nodes\" array"},
  };
  for (const auto& [nodes, expected] : bad) {
    INFO(nodes);
    REQUIRE_THROWS_AS(trace::load_host_et_comms(write_et(nodes)), InputError);
    REQUIRE_THROWS_WITH(trace::load_host_et_comms(write_et(nodes)), Catch::Contains("rank0.json") && Catch::Contains(expected));
  }
  // A directory without host execution traces is named, not "0 host execution trace(s) for 8 ranks".
  const std::string empty = test::fresh_dir("empty_host_et");
  REQUIRE_THROWS_WITH(trace::expand_host_et_paths({empty}), Catch::Contains("empty_host_et") && Catch::Contains("no .json"));
  REQUIRE_THROWS_WITH(trace::expand_host_et_paths({empty + "/absent.json"}),
                      Catch::Contains("absent.json") && Catch::Contains("no such file"));
  // One file for the 8 ranks of DLRM: the count is named, with the files given.
  {
    const auto job = test::load_dlrm();
    auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
    const std::string one = test::dlrm_host_et_dir() + "/dlrm_eg_0.json.gz";
    REQUIRE_THROWS_WITH(comm::attach_host_et_sizes(ops, job.traces, {one}),
                        Catch::Contains("comm_sizes") && Catch::Contains("1 host execution trace(s) (") &&
                            Catch::Contains("dlrm_eg_0.json.gz") && Catch::Contains("for 8 trace rank(s)"));
  }
  // A file name with a 30-digit number orders last instead of overflowing.
  test::write_text(empty + "/et_1.json", "{}");
  test::write_text(empty + "/et_123456789012345678901234567890.json", "{}");
  const auto files = trace::expand_host_et_paths({empty});
  REQUIRE(files.size() == 2);
  CHECK_THAT(files[1], Catch::Contains("1234567890"));
}

TEST_CASE("a kernel without collective metadata takes its launching op's, as the graph matched it") {
  // Older traces, and NCCL's generic kernels (ncclDevKernel_Generic, whose name says no
  // operation), leave the metadata on the record_param_comms op that launched the kernel.
  auto job = test::load_a100();
  const auto with = comm::find_comm_ops(job.built.dfg, job.traces);
  auto& rank = job.traces.ranks[0];
  std::size_t stripped = 0;
  for (const auto& e : rank.events)
    if (e.kind == trace::EventKind::kCollective && e.attrs != trace::kNoAttrs && rank.attrs[e.attrs].collective) {
      rank.attrs[e.attrs].collective.reset();
      ++stripped;
    }
  REQUIRE(stripped == with.size());
  const auto without = comm::find_comm_ops(job.built.dfg, job.traces);
  REQUIRE(without.size() == with.size());
  for (std::size_t i = 0; i < with.size(); ++i) {
    CHECK(without[i].op == with[i].op);
    CHECK(without[i].bytes == with[i].bytes);
    CHECK(without[i].size_source == comm::SizeSource::kTrace);
  }
  // With no metadata anywhere, a kernel whose name says no operation is a clear error.
  for (auto& a : rank.attrs) a.collective.reset();
  for (auto& e : rank.events)
    if (e.kind == trace::EventKind::kCollective) e.name = job.traces.strings.intern("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
  for (const graph::NodeId id : job.built.dfg.node_ids())
    if (job.built.dfg.node(id).kind == graph::NodeKind::kCollective)
      job.built.dfg.node(id).name = job.traces.strings.intern("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
  REQUIRE_THROWS_WITH(comm::find_comm_ops(job.built.dfg, job.traces),
                      Catch::Contains("ncclDevKernel_Generic_1") && Catch::Contains("Collective name"));
}

TEST_CASE("gathers and scatters are sized as PyTorch records them and re-timed like the other collectives") {
  // Before, a trace with either stopped every communication what-if ("unknown collective").
  // The A100 trace's broadcasts (2-rank group), relabelled as PyTorch labels a gather or scatter:
  // 'In msg nelems' is one rank's piece for gather, the root's whole buffer for scatter.
  for (const std::string as : {"gather", "scatter"}) {
    INFO(as);
    auto job = test::load_a100();
    const auto before = comm::find_comm_ops(job.built.dfg, job.traces);
    for (auto& a : job.traces.ranks[0].attrs)
      if (a.collective && a.collective->op == "broadcast") a.collective->op = as;
    const auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
    REQUIRE(ops.size() == before.size());
    std::size_t relabelled = 0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (before[i].op != comm::CollectiveOp::kBroadcast) continue;
      ++relabelled;
      CHECK(ops[i].op == (as == "gather" ? comm::CollectiveOp::kGather : comm::CollectiveOp::kScatter));
      REQUIRE(ops[i].bytes);
      CHECK(*ops[i].bytes == *before[i].bytes * (as == "gather" ? ops[i].group_size : 1));
    }
    CHECK(relabelled > 0);
    const Outcome o = run(job, {"--cluster", "dgx-h100", "--ranks", "16"});
    CHECK(job_time(o.report) > 0);
  }
}

TEST_CASE("gathers and scatters take their sizes from host execution traces") {
  // DLRM's first all-to-all of each rank (SendRecv kernels) relabelled in copies of its host
  // execution traces: a gather's input is one rank's piece; a scatter's non-root ranks record
  // an empty tensor, which leaves the size to be inferred rather than 0. In the trace, that
  // kernel is left as it would be without its nccl:all_to_all range (a SendRecv kernel, no size):
  // the range would otherwise say all_to_all, which a host execution trace may not contradict.
  auto job = test::load_dlrm();
  for (trace::TraceRank& rank : job.traces.ranks) {
    for (const trace::Event& e : rank.events) {
      if (e.kind != trace::EventKind::kCollective) continue;
      trace::CollectiveInfo& info = *rank.attrs[e.attrs].collective;
      REQUIRE(info.op == "alltoall");
      info.op = "sendrecv";
      info.in_nelems.reset();
      break;
    }
  }
  for (const std::string as : {"gather", "scatter"}) {
    INFO(as);
    const std::string dir = test::fresh_dir("host_et_" + as);
    for (const auto& file : trace::expand_host_et_paths({test::dlrm_host_et_dir()})) {
      nlohmann::json et = nlohmann::json::parse(read_whole_file(file));
      for (auto& node : et["nodes"]) {
        if (node["name"] != "nccl:all_to_all") continue;
        node["name"] = "nccl:" + as;
        if (as == "scatter") node["inputs"][0][3] = 0;
        break;
      }
      std::string name = std::filesystem::path(file).filename().string();
      name = name.substr(0, name.find(".json")) + ".json";
      test::write_text(dir + "/" + name, et.dump());
    }
    auto ops = comm::find_comm_ops(job.built.dfg, job.traces);
    comm::attach_host_et_sizes(ops, job.traces, trace::expand_host_et_paths({dir}));
    const auto sized = test::dlrm_sized_ops(job);
    std::set<std::size_t> ranks_seen;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ranks_seen.count(ops[i].rank_index)) {
        CHECK(ops[i].bytes == sized[i].bytes);
        continue;
      }
      ranks_seen.insert(ops[i].rank_index);  // the rank's first op: the relabelled one
      CHECK(sized[i].op == comm::CollectiveOp::kAllToAll);
      if (as == "gather") {
        CHECK(ops[i].op == comm::CollectiveOp::kGather);
        REQUIRE(ops[i].bytes);
        CHECK(*ops[i].bytes == *sized[i].bytes * ops[i].group_size);
      } else {
        CHECK(ops[i].op == comm::CollectiveOp::kScatter);
        CHECK_FALSE(ops[i].bytes);
      }
    }
    CHECK(ranks_seen.size() == 8);
  }
}
