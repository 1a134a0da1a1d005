#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "core/byte_source.h"
#include "core/error.h"
#include "trace/iterations.h"
#include "trace/loader.h"
#include "trace_fixtures.h"

using namespace dpro;
namespace fs = std::filesystem;

namespace {

// Runs load() and returns the InputError's message ("" if none was thrown).
std::string load_error(const std::vector<std::string>& paths, bool allow_partial = false) {
  test::CapturingLog log;
  try {
    test::load(paths, log.log, allow_partial);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kMinimalTrace = R"({"distributedInfo": {"rank": 0, "world_size": 1},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": %DUR%}
  ]})";

std::string minimal_trace(const std::string& dur) {
  std::string text = kMinimalTrace;
  text.replace(text.find("%DUR%"), 5, dur);
  return text;
}

// The InputError loading `files` on `threads` threads gives ("" when it loads).
std::string load_error(const std::vector<std::string>& files, unsigned threads) {
  test::CapturingLog log;
  trace::LoadOptions options;
  options.threads = threads;
  try {
    trace::load_traces(files, options, log.log);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// The set `paths` load into on `threads` threads, every message logged kept in `messages`.
trace::TraceSet load_on_threads(const std::vector<std::string>& paths, unsigned threads, std::vector<std::string>& messages) {
  Logger log(LogLevel::kDebug, [&](LogLevel, const std::string& m) { messages.push_back(m); });
  trace::LoadOptions options;
  options.threads = threads;
  return trace::load_traces(paths, options, log);
}

// The same string table, id by id, and as many ranks.
void require_same_strings_and_ranks(const trace::TraceSet& one, const trace::TraceSet& many) {
  REQUIRE(many.strings.size() == one.strings.size());
  for (std::uint32_t id = 0; id < one.strings.size(); ++id) REQUIRE(many.strings.view(StringId{id}) == one.strings.view(StringId{id}));
  REQUIRE(many.ranks.size() == one.ranks.size());
}

}  // namespace

TEST_CASE("A directory with one file per rank loads as one job, ranks in order") {
  test::CapturingLog log;
  const auto set = test::load({test::dlrm_dir()}, log.log);
  REQUIRE(set.ranks.size() == 8);
  for (int r = 0; r < 8; ++r) CHECK(set.ranks[r].rank == r);
  CHECK_FALSE(log.contains("warning"));
}

TEST_CASE("Ranks read in parallel give the set a sequential read gives, whatever the thread count") {
  const auto read = [](unsigned threads, std::vector<std::string>& messages) {
    return load_on_threads({test::dlrm_dir()}, threads, messages);
  };
  std::vector<std::string> one_log;
  const auto one = read(1, one_log);
  for (unsigned threads : {2u, 3u, 8u}) {
    std::vector<std::string> many_log;
    const auto many = read(threads, many_log);
    CHECK(many_log == one_log);
    require_same_strings_and_ranks(one, many);
    for (std::size_t r = 0; r < one.ranks.size(); ++r) {
      const auto& a = one.ranks[r].events;
      const auto& b = many.ranks[r].events;
      REQUIRE(a.size() == b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        REQUIRE(a[i].name == b[i].name);
        REQUIRE(a[i].start == b[i].start);
        REQUIRE(a[i].dur == b[i].dur);
        REQUIRE(a[i].resource == b[i].resource);
      }
    }
  }
}

TEST_CASE("Ranks merged as they are read, largest file first, give the sequential set around a skipped file") {
  // A skipped file (no CPU or GPU events) and a small rank among the DLRM files: the files are
  // started largest first and merged in file order, the skipped one in the middle holding back
  // none of the merges after it.
  const fs::path dir = test::fresh_dir("parallel_merge");
  std::vector<std::string> files = test::dlrm_files();
  const std::string agent = (dir / "agent.json").string(), small = (dir / "small.json").string();
  test::write_text(agent, R"({"schemaVersion": 1, "traceEvents": []})");
  std::string small_text = minimal_trace("7");
  small_text.replace(small_text.find(R"({"rank": 0, "world_size": 1})"), 28, "{}");
  test::write_text(small, small_text);
  files.insert(files.begin() + 3, agent);
  files.insert(files.begin() + 1, small);
  const auto read = [&](unsigned threads, std::vector<std::string>& messages) { return load_on_threads(files, threads, messages); };
  std::vector<std::string> one_log;
  const auto one = read(1, one_log);
  REQUIRE(one.ranks.size() == 9);
  CHECK(std::count_if(one_log.begin(), one_log.end(), [](const std::string& m) { return m.find("skipped") != std::string::npos; }) == 1);
  for (unsigned threads : {2u, 3u, 10u}) {
    std::vector<std::string> many_log;
    const auto many = read(threads, many_log);
    CHECK(many_log == one_log);
    require_same_strings_and_ranks(one, many);
    for (std::size_t r = 0; r < one.ranks.size(); ++r) {
      const trace::TraceRank& a = one.ranks[r];
      const trace::TraceRank& b = many.ranks[r];
      CHECK(a.file == b.file);
      CHECK(a.rank == b.rank);
      CHECK(a.iterations.size() == b.iterations.size());
      CHECK(a.attrs.size() == b.attrs.size());
      REQUIRE(a.events.size() == b.events.size());
      for (std::size_t i = 0; i < a.events.size(); ++i) {
        REQUIRE(a.events[i].name == b.events[i].name);
        REQUIRE(a.events[i].start == b.events[i].start);
        REQUIRE(a.events[i].dur == b.events[i].dur);
        REQUIRE(a.events[i].kind == b.events[i].kind);
        REQUIRE(a.events[i].attrs == b.events[i].attrs);
      }
    }
  }
}

TEST_CASE("In a parallel read the first file's error in file order is the one reported") {
  const fs::path dir = test::fresh_dir("parallel_error");
  std::vector<std::string> files = test::dlrm_files();
  const std::string bad1 = (dir / "bad1.json").string(), bad2 = (dir / "bad2.json").string();
  test::write_text(bad1, minimal_trace("-5"));
  test::write_text(bad2, "{\"traceEvents\": [");
  files.insert(files.begin() + 5, bad2);
  files.insert(files.begin() + 2, bad1);
  for (unsigned threads : {1u, 2u, 4u})
    CHECK_THAT(load_error(files, threads), Catch::Contains("bad1.json") && Catch::Contains("negative duration"));
}

TEST_CASE("A truncated gzip rank file read in parallel (inflated inline) is an error naming it") {
  const fs::path dir = test::fresh_dir("parallel_gzip_error");
  std::vector<std::string> files = test::dlrm_files();
  std::string packed;
  {
    std::ifstream in(files[6], std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = (dir / "cut.json.gz").string();
  std::ofstream(cut, std::ios::binary) << packed.substr(0, packed.size() * 3 / 4);
  files[6] = cut;
  for (unsigned threads : {1u, 2u, 4u})
    CHECK_THAT(load_error(files, threads), Catch::Contains("cut.json.gz") && Catch::Contains("truncated gzip data"));
}

TEST_CASE("A rank file missing from a multi-rank set is an error naming the rank") {
  auto files = test::dlrm_files();
  files.erase(files.begin() + 3);
  const std::string error = load_error(files);
  CHECK_THAT(error, Catch::Contains("missing") && Catch::Contains("rank 3") && Catch::Contains("--allow-partial"));
  CHECK(load_error(files, /*allow_partial=*/true).empty());
}

TEST_CASE("Two files claiming the same rank are an error naming both") {
  const auto files = test::dlrm_files();
  const std::string dir = test::fresh_dir("same_rank");
  fs::copy_file(files[0], dir + "/copy.json.gz");
  const std::string error = load_error({files[0], dir + "/copy.json.gz"});
  CHECK_THAT(error, Catch::Contains("rank 0 is also claimed by"));
}

TEST_CASE("One file given twice, by any path, is an error rather than a job of two ranks") {
  const std::string file = test::source_path("traces/hta/no-rank.json.gz");  // no rank: would be ranks 0 and 1
  CHECK_THAT(load_error({file, file}), Catch::Contains("is given twice"));
  const std::string dir = test::fresh_dir("given_twice");
  fs::create_symlink(file, dir + "/link.json.gz");
  CHECK_THAT(load_error({file, dir}), Catch::Contains("is given twice") && Catch::Contains("link.json.gz"));
}

TEST_CASE("Captures of two runs of one host are refused as one job") {
  // Two bundled dpro-profile captures recorded one after the other on one machine.
  const std::string error =
      load_error({test::source_path("traces/h100/gpt2"), test::source_path("traces/h100/resnet50")});
  CHECK_THAT(error, Catch::Contains("captures of two runs") && Catch::Contains("host vm"));
  // Two ranks of one job on one host (ResNet-18 under gloo, two processes on the GPU) load.
  CHECK(load_error({test::source_path("traces/h100/resnet18-gloo2")}).empty());
}

TEST_CASE("Overlapping and repeated ProfilerStep spans are mended into consecutive steps, with a warning") {
  const std::string dir = test::fresh_dir("overlap");
  test::write_text(dir + "/t.json", R"({"distributedInfo": {"rank": 0, "world_size": 1},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 150},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 2, "ts": 100, "dur": 90},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": 1, "ts": 200, "dur": 100},
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1, "tid": 1, "ts": 200, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 110, "dur": 10}
  ]})");
  test::CapturingLog log;
  const auto steps = test::load({dir + "/t.json"}, log.log).ranks.at(0).iterations;
  // #1 is cut where #2 begins; #3 and #4 begin together: #3 is left empty and dropped.
  REQUIRE(steps.size() == 3);
  CHECK(steps[0].name == "ProfilerStep#1");
  CHECK(steps[0].end == 100000);
  CHECK(steps[1].name == "ProfilerStep#2");
  CHECK(steps[1].end == 200000);
  CHECK(steps[2].name == "ProfilerStep#4");
  for (std::size_t k = 1; k < steps.size(); ++k) CHECK(steps[k].start >= steps[k - 1].end);
  CHECK(log.contains("1 ProfilerStep span(s) recorded again (ProfilerStep#2 first"));
  CHECK(log.contains("2 step(s) overlapping the one before"));
  CHECK(log.contains("1 left empty and dropped"));
}

TEST_CASE("Traces without distributedInfo or rank get rank 0 and a warning") {
  for (const char* name : {"traces/hta/no-distributed-info.json.gz", "traces/hta/no-rank.json.gz"}) {
    test::CapturingLog log;
    const auto set = test::load({test::source_path(name)}, log.log);
    REQUIRE(set.ranks.size() == 1);
    CHECK(set.ranks[0].rank == 0);
    CHECK_FALSE(set.ranks[0].rank_known);
    CHECK(log.contains("no rank in distributedInfo; assuming rank 0"));
    CHECK(set.ranks[0].iterations.size() == 1);
  }
}

TEST_CASE("A rank missing from distributedInfo is taken from a rank-named file") {
  const std::string dir = test::fresh_dir("rank_from_name");
  fs::copy_file(test::source_path("traces/hta/no-rank.json.gz"), dir + "/trainer_rank5.json.gz");
  test::CapturingLog log;
  const auto set = test::load({dir + "/trainer_rank5.json.gz"}, log.log);
  CHECK(set.ranks[0].rank == 5);
  CHECK(log.contains("assuming rank 5"));
}

TEST_CASE("A number in a file name beyond any rank is not taken as the rank") {
  // worker99999999999 once ended in "internal error: stoi" (the number does not fit an int).
  const std::string dir = test::fresh_dir("rank_name_too_large");
  for (const char* name : {"worker99999999999.json.gz", "rank1048577.json.gz"}) {
    fs::copy_file(test::source_path("traces/hta/no-rank.json.gz"), dir + "/" + name);
    test::CapturingLog log;
    const auto set = test::load({dir + "/" + name}, log.log);
    REQUIRE(set.ranks.size() == 1);
    CHECK(set.ranks[0].rank == 0);
    CHECK(log.contains("assuming rank 0"));
  }
  fs::copy_file(test::source_path("traces/hta/no-rank.json.gz"), dir + "/worker1048576.json.gz");
  test::CapturingLog log;
  const auto set = test::load({dir + "/worker1048576.json.gz"}, log.log);  // 2^20, the largest rank
  CHECK(set.ranks[0].rank == 1048576);
}

TEST_CASE("Malformed JSON is an error naming the file and the byte") {
  const std::string dir = test::fresh_dir("malformed");
  test::write_text(dir + "/bad.json", R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2} {"ph": "X"}]})");
  CHECK_THAT(load_error({dir + "/bad.json"}), Catch::Contains(dir + "/bad.json") && Catch::Contains("byte") &&
                                                   Catch::Contains("malformed JSON"));
}

TEST_CASE("A truncated trace (a job killed mid-write) is an error, not a hang or a crash") {
  const std::string whole = read_whole_file(test::dlrm_files()[0]);
  const std::string dir = test::fresh_dir("truncated");
  test::write_text(dir + "/cut.json", whole.substr(0, whole.size() * 2 / 3));
  CHECK_THAT(load_error({dir + "/cut.json"}), Catch::Contains("truncated"));
}

TEST_CASE("An event with a negative duration is an error naming the event") {
  const std::string dir = test::fresh_dir("negative");
  test::write_text(dir + "/neg.json", minimal_trace("-5"));
  CHECK_THAT(load_error({dir + "/neg.json"}),
             Catch::Contains("neg.json") && Catch::Contains("event #1 'aten::mm'") && Catch::Contains("negative duration"));
  test::write_text(dir + "/ok.json", minimal_trace("5"));
  CHECK(load_error({dir + "/ok.json"}).empty());
}

TEST_CASE("Empty traces are errors") {
  const std::string dir = test::fresh_dir("empty");
  test::write_text(dir + "/empty.json", "");
  CHECK_THAT(load_error({dir + "/empty.json"}), Catch::Contains("empty file"));
  test::write_text(dir + "/no_events.json", R"({"schemaVersion": 1, "traceEvents": []})");
  CHECK_THAT(load_error({dir + "/no_events.json"}), Catch::Contains("empty trace"));
  test::write_text(dir + "/no_events2.json", R"({"schemaVersion": 1, "traceEvents": []})");
  CHECK_THAT(load_error({dir + "/no_events.json", dir + "/no_events2.json"}), Catch::Contains("empty traces"));
  const std::string empty_dir = test::fresh_dir("empty_dir");
  CHECK_THAT(load_error({empty_dir}), Catch::Contains("no trace files"));
  CHECK_THAT(load_error({"/nonexistent/dir/trace.json"}), Catch::Contains("no such file"));
}

TEST_CASE("Among other ranks a file with no events is skipped with a warning") {
  // dpro-profile under torchrun: the agent process writes a trace with nothing in it.
  const std::string dir = test::fresh_dir("agent");
  test::write_text(dir + "/agent.json", R"({"schemaVersion": 1, "traceEvents": []})");
  test::write_text(dir + "/worker.json", minimal_trace("5"));
  Logger log(LogLevel::kQuiet);
  auto set = trace::load_traces({dir}, {}, log);
  CHECK(set.ranks.size() == 1);
  CHECK(log.warning_count() >= 1);
}

TEST_CASE("A file that is not a trace at all is refused") {
  const std::string dir = test::fresh_dir("not_trace");
  test::write_text(dir + "/notes.json", "hello, this is not JSON");
  CHECK_THAT(load_error({dir + "/notes.json"}), Catch::Contains("not a trace format"));
}

TEST_CASE("A field of the wrong type is an error naming the event and the field") {
  const std::string dir = test::fresh_dir("wrong_type");
  std::string text = minimal_trace("5");
  text.replace(text.find("\"cat\": \"cpu_op\""), 15, "\"cat\": 7");
  test::write_text(dir + "/t.json", text);
  CHECK_THAT(load_error({dir + "/t.json"}), Catch::Contains("t.json") && Catch::Contains("event #1") &&
                                                 Catch::Contains("field \"cat\""));
}

TEST_CASE("A host execution trace given as the trace says where it belongs") {
  CHECK_THAT(load_error({test::source_path("traces/hta/simple-add-host-et.json.gz")}),
             Catch::Contains("simple-add-host-et.json.gz") && Catch::Contains("execution trace") &&
                 Catch::Contains("--comm-sizes"));
}

TEST_CASE("A name pattern matches whole names with '*' for any characters") {
  using trace::glob_match;
  CHECK(glob_match("train_step", "train_step"));
  CHECK_FALSE(glob_match("train_step", "train_step_2"));
  CHECK_FALSE(glob_match("train", "train_step"));
  CHECK(glob_match("train_step*", "train_step_2"));
  CHECK(glob_match("*train_step", "train.py(12): train_step"));
  CHECK(glob_match("*x*y", "axbxcy"));
  CHECK_FALSE(glob_match("*x*y", "axbxcyz"));
  CHECK(glob_match("a**b", "ab"));
  CHECK(glob_match("*", ""));
  CHECK_FALSE(glob_match("", "x"));
  CHECK(glob_match("[param|*|forward]", "[param|pytorch.model.alex_net|0|measure|forward]"));
  // Against the textbook recursive matcher, on every pattern and name of up to 5 characters
  // over {a, b, *} and {a, b}.
  std::function<bool(std::string_view, std::string_view)> reference = [&](std::string_view p, std::string_view n) {
    if (p.empty()) return n.empty();
    if (p[0] == '*') return reference(p.substr(1), n) || (!n.empty() && reference(p, n.substr(1)));
    return !n.empty() && p[0] == n[0] && reference(p.substr(1), n.substr(1));
  };
  auto all_strings = [](const std::string& alphabet, std::size_t max_len) {
    std::vector<std::string> out{""};
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i].size() < max_len)
        for (char c : alphabet) out.push_back(out[i] + c);
    return out;
  };
  std::size_t disagreements = 0, pairs = 0;
  for (const std::string& p : all_strings("ab*", 5))
    for (const std::string& n : all_strings("ab", 5)) {
      ++pairs;
      disagreements += glob_match(p, n) != reference(p, n);
    }
  CHECK(pairs == 364 * 63);
  CHECK(disagreements == 0);
}

TEST_CASE("An iteration marker makes its occurrences the iterations instead of ProfilerStep") {
  const std::string dir = test::fresh_dir("marker");
  // A step annotation that nests in itself once, a second one, and a Python frame of the same
  // function (Python frames are not loaded, so never a marker); ProfilerStep#1 spans them all.
  test::write_text(dir + "/t.json", R"({"distributedInfo": {"rank": 0, "world_size": 1},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "user_annotation", "name": "train_step", "pid": 1, "tid": 1, "ts": 100, "dur": 200},
    {"ph": "X", "cat": "user_annotation", "name": "train_step", "pid": 1, "tid": 1, "ts": 150, "dur": 50},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 160, "dur": 10},
    {"ph": "X", "cat": "user_annotation", "name": "train_step", "pid": 1, "tid": 1, "ts": 400, "dur": 300},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 410, "dur": 10},
    {"ph": "X", "cat": "python_function", "name": "train.py(12): train_step", "pid": 1, "tid": 1, "ts": 800, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 810, "dur": 10}
  ]})");
  test::CapturingLog log;
  auto load = [&](const std::string& marker) {
    trace::LoadOptions options;
    options.iteration_marker = marker;
    return trace::load_traces({dir + "/t.json"}, options, log.log);
  };
  const auto steps = load("").ranks.at(0).iterations;
  REQUIRE(steps.size() == 1);
  CHECK(steps[0].name == "ProfilerStep#1");

  const auto marked = load("train_step").ranks.at(0).iterations;
  REQUIRE(marked.size() == 2);  // the nested occurrence belongs to the first
  CHECK(marked[0].name == "train_step #1");
  CHECK(marked[0].number == 1);
  CHECK(marked[0].start == 100000);
  CHECK(marked[0].end == 300000);
  CHECK(marked[1].name == "train_step #2");
  CHECK(marked[1].start == 400000);

  CHECK(load("*train_step").ranks.at(0).iterations.size() == 2);

  try {
    load("train_stp");
    FAIL("a marker found nowhere must be an error");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("t.json") && Catch::Contains("iteration_marker train_stp"));
  }
}

TEST_CASE("A trace holding every event twice loads as the trace, with a warning") {
  test::CapturingLog once_log, twice_log;
  const std::string file = test::source_path("traces/hta/alexnet-a100-single.json.gz");
  const auto once = test::load({file}, once_log.log);
  // The same trace with each complete event repeated after the last one.
  auto doc = nlohmann::json::parse(read_whole_file(file));
  const auto events = doc.at("traceEvents");
  for (const auto& e : events)
    if (e.value("ph", "") == "X") doc["traceEvents"].push_back(e);
  const std::string dir = test::fresh_dir("repeated");
  test::write_text(dir + "/twice.json", doc.dump());
  const auto twice = test::load({dir + "/twice.json"}, twice_log.log);
  CHECK(twice.ranks.at(0).events.size() == once.ranks.at(0).events.size());
  CHECK(twice_log.contains("event(s) recorded twice"));
  CHECK_FALSE(once_log.contains("recorded twice"));
}

TEST_CASE("GPU ops overlapping on one stream are named in a warning, and times beyond the bound are refused") {
  const std::string dir = test::fresh_dir("stream_overlap");
  test::write_text(dir + "/t.json", R"({"distributedInfo": {"rank": 0, "world_size": 1},
  "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "first", "pid": 0, "tid": 7, "ts": 100, "dur": 50, "args": {"stream": 7, "device": 0, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "second", "pid": 0, "tid": 7, "ts": 120, "dur": 50, "args": {"stream": 7, "device": 0, "correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "third", "pid": 0, "tid": 7, "ts": 170.5, "dur": 10, "args": {"stream": 7, "device": 0, "correlation": 3}}
  ]})");
  test::CapturingLog log;
  test::load({dir + "/t.json"}, log.log);
  // 'second' starts 30 us inside 'first'; 'third' touches 'second' within the rounding tolerance.
  CHECK(log.contains("1 GPU op(s) start before the previous op of their stream ended"));
  CHECK(log.contains("'second'"));
  CHECK(log.contains("30.000 us inside 'first'"));

  test::write_text(dir + "/long.json", R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
    {"ph": "X", "cat": "cpu_op", "name": "b", "pid": 1, "tid": 1, "ts": 5000000000000, "dur": 1}
  ]})");
  CHECK_THAT(load_error({dir + "/long.json"}), Catch::Contains("long.json") && Catch::Contains("52 days"));
}

TEST_CASE("A link loop in an input folder is an error naming the entry") {
  const std::string dir = test::fresh_dir("link_loop");
  fs::copy_file(test::source_path("traces/hta/no-rank.json.gz"), dir + "/t.json.gz");
  fs::create_symlink("a.json", dir + "/b.json");
  fs::create_symlink("b.json", dir + "/a.json");
  CHECK_THAT(load_error({dir}), Catch::Contains("a.json") && Catch::Contains("cannot read"));
}

TEST_CASE("Begin/end (B/E) duration events are paired per thread, the unmatched ones counted in a warning") {
  const std::string dir = test::fresh_dir("begin_end");
  test::write_text(dir + "/t.json", R"({"traceEvents": [
    {"ph": "E", "name": "stray", "pid": 1, "tid": 1, "ts": 5},
    {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 12},
    {"ph": "B", "cat": "cpu_op", "name": "other thread", "pid": 1, "tid": 2, "ts": 13},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 15},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 30},
    {"ph": "X", "cat": "cpu_op", "name": "complete", "pid": 1, "tid": 1, "ts": 40, "dur": 5}
  ]})");
  test::CapturingLog log;
  const auto set = test::load({dir + "/t.json"}, log.log);
  std::map<std::string, std::pair<Nanos, Nanos>> spans;
  for (const auto& e : set.ranks.at(0).events) spans[std::string(set.name(e))] = {e.start, e.dur};
  REQUIRE(spans.count("outer") == 1);
  CHECK(spans["outer"].second == 20000);
  CHECK(spans["inner"].second == 3000);
  CHECK(spans.count("complete") == 1);
  CHECK(spans.count("other thread") == 0);
  CHECK(log.contains("1 \"B\" event(s) without their \"E\" and 1 \"E\" event(s) without a \"B\" were dropped"));
}
