#include "trace/loader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/strings.h"
#include "trace/iterations.h"
#include "trace/native/clock_alignment.h"

namespace dpro::trace {
namespace fs = std::filesystem;

namespace {

bool looks_like_trace_file(const fs::path& p) {
  const std::string name = p.filename().string();
  for (const char* suffix : {".json", ".json.gz", ".dpro", ".dpro.gz"}) {
    const std::string s(suffix);
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) return true;
  }
  return false;
}

std::string read_head(const std::string& path) {
  ByteSource source(path);
  std::string head(4096, '\0');
  head.resize(source.read(head.data(), head.size()));
  return head;
}

std::optional<int> rank_from_file_name(const std::string& path) {
  static const std::regex pattern(R"((?:rank|worker)[_\-]?(\d+))", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (!std::regex_search(name, m, pattern)) return std::nullopt;
  // A number beyond any rank (worker99999999999) is not taken as one: the next free rank is.
  const auto rank = parse_integer(m[1].str());
  if (!rank || *rank > kMaxRank) return std::nullopt;
  return static_cast<int>(*rank);
}

void assign_ranks(std::vector<TraceRank>& ranks, Logger& log) {
  std::set<int> taken;
  for (const TraceRank& r : ranks) {
    if (r.rank_known) taken.insert(r.rank);
  }
  for (TraceRank& r : ranks) {
    if (r.rank_known) continue;
    std::optional<int> guess = rank_from_file_name(r.file);
    if (guess && taken.count(*guess)) guess.reset();
    if (!guess) {
      int next = 0;
      while (taken.count(next)) ++next;
      guess = next;
    }
    r.rank = *guess;
    taken.insert(r.rank);
    log.warn(r.file + ": no rank in distributedInfo; assuming rank " + std::to_string(r.rank));
  }
  std::sort(ranks.begin(), ranks.end(), [](const TraceRank& a, const TraceRank& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < ranks.size(); ++i) {
    if (ranks[i].rank == ranks[i - 1].rank) {
      throw InputError(ranks[i].file, "distributedInfo.rank",
                       "rank " + std::to_string(ranks[i].rank) + " is also claimed by " + ranks[i - 1].file);
    }
  }
}

void check_complete(const std::vector<TraceRank>& ranks, const LoadOptions& options, Logger& log) {
  int world = 0;
  for (const TraceRank& r : ranks) world = std::max(world, r.world_size.value_or(0));
  if (world <= 1) return;
  if (ranks.size() == 1) {
    log.warn(ranks[0].file + ": only rank " + std::to_string(ranks[0].rank) + " of a " +
             std::to_string(world) +
             "-rank job; its collectives are replayed with their measured durations (waiting included)");
    return;
  }
  std::vector<int> missing;
  std::set<int> present;
  for (const TraceRank& r : ranks) present.insert(r.rank);
  for (int i = 0; i < world; ++i) {
    if (!present.count(i)) missing.push_back(i);
  }
  if (missing.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < missing.size() && i < 8; ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 8) list += ", ... (" + std::to_string(missing.size()) + " in all)";
  const std::string message = "rank file(s) missing from a " + std::to_string(world) +
                              "-rank set: rank " + list + " (one file per rank expected)";
  if (!options.allow_partial) {
    throw InputError(ranks.front().file, "", message + "; pass --allow-partial to replay the ranks present");
  }
  log.warn(message + "; replaying the " + std::to_string(ranks.size()) +
           " ranks present, collectives with their measured durations");
}

}  // namespace

std::vector<std::string> expand_trace_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> inside;
      for (const auto& entry : fs::directory_iterator(p)) {
        if (entry.is_regular_file() && looks_like_trace_file(entry.path())) inside.push_back(entry.path().string());
      }
      if (inside.empty()) throw InputError(p, "", "directory holds no trace files (*.json, *.json.gz, *.dpro)");
      std::sort(inside.begin(), inside.end());
      files.insert(files.end(), inside.begin(), inside.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      throw InputError(p, "", "no such file or directory");
    }
  }
  if (files.empty()) throw InputError("", "", "no trace files given");
  return files;
}

TraceSet load_traces(const std::vector<std::string>& paths, const LoadOptions& options, Logger& log) {
  const std::vector<std::string> files = expand_trace_paths(paths);
  const auto importers = make_importers();
  TraceSet set;
  std::size_t skipped = 0;
  for (std::size_t index = 0; index < files.size(); ++index) {
    const std::string& file = files[index];
    if (options.progress) options.progress(index, files.size(), file);
    const std::string head = read_head(file);
    if (head.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError(file, "", "empty file");
    const Importer* chosen = nullptr;
    for (const auto& importer : importers) {
      if (importer->sniff(head)) { chosen = importer.get(); break; }
    }
    if (!chosen) throw InputError(file, "", "not a trace format dpro knows (Kineto JSON or dpro native)");
    log.info("reading " + file + " (" + std::string(chosen->format()) + ")");
    TraceRank rank = chosen->read(file, set.strings, options.import, log);
    detect_iterations(rank, set.strings, options.iteration_marker);
    bool any_work = false;
    for (const Event& e : rank.events) {
      if (is_cpu_side(e.kind) || is_gpu_work(e.kind)) { any_work = true; break; }
    }
    if (!any_work) {
      // dpro-profile under torchrun also traces the agent process, which starts CUDA but runs
      // nothing on it: among other ranks' files such a file is skipped, alone it is an error.
      if (files.size() == 1) throw InputError(file, "traceEvents", "empty trace: no CPU or GPU events");
      log.warn(file + ": no CPU or GPU events (a process that ran nothing on the GPU, such as torchrun's agent); skipped");
      ++skipped;
      continue;
    }
    set.ranks.push_back(std::move(rank));
  }
  if (set.ranks.empty())
    throw InputError(files.front(), "traceEvents", "empty traces: none of the " + std::to_string(skipped) +
                                                       " files holds CPU or GPU events");
  if (options.progress) options.progress(files.size(), files.size(), "");
  if (!options.iteration_marker.empty() &&
      std::all_of(set.ranks.begin(), set.ranks.end(), [](const TraceRank& r) { return r.iterations.empty(); }))
    throw OptionError("iteration_marker", options.iteration_marker,
                      "no CPU annotation or operator of that name in the traces ('*' matches any "
                      "characters; names are matched whole)",
                      set.ranks.front().file);
  assign_ranks(set.ranks, log);
  check_complete(set.ranks, options, log);
  if (options.align_clocks) align_clocks(set, log);  // per-host offsets from matched collectives
  return set;
}

}  // namespace dpro::trace
