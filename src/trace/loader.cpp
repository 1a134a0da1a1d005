#include "trace/loader.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <map>
#include <regex>
#include <mutex>
#include <set>
#include <thread>

#include "core/byte_source.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/time.h"
#include "trace/event_checks.h"
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

// The ranks of one job run at the same time. Captures of one host share its clock: two of them
// whose spans leave a gap between them (no rank running across it) are two runs, not one job
// (two unrelated dpro-profile runs left in one --out folder).
void check_one_run(const std::vector<TraceRank>& ranks) {
  struct Span {
    Nanos start, end;
    const TraceRank* rank;
  };
  std::map<std::string, std::vector<Span>> by_host;
  for (const TraceRank& r : ranks) {
    if (r.host.empty() || r.events.empty()) continue;
    Nanos end = r.events.front().end();
    for (const Event& e : r.events) end = std::max(end, e.end());
    by_host[r.host].push_back({r.events.front().start, end, &r});  // events are sorted by start
  }
  for (auto& [host, spans] : by_host) {
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) { return a.start < b.start; });
    const Span* reaching = &spans.front();  // the span that ends last among those started so far
    for (const Span& s : spans) {
      if (s.start > reaching->end)
        throw InputError(s.rank->file, "",
                         "was recorded after " + reaching->rank->file + " had ended (" +
                             format_duration(s.start - reaching->end) + " later, host " + host +
                             "): captures of two runs, not ranks of one job; replay each run's traces on their own");
      if (s.end > reaching->end) reaching = &s;
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
        if (!looks_like_trace_file(entry.path())) continue;
        const bool regular = entry.is_regular_file(ec);
        if (ec) throw InputError(entry.path().string(), "", "cannot read: " + ec.message());  // a link loop, ...
        if (regular) inside.push_back(entry.path().string());
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
  // One file given twice (by two paths, a link, or a folder and a file in it) would replay as
  // two ranks of one job.
  std::map<std::pair<dev_t, ino_t>, const std::string*> seen;
  for (const std::string& file : files) {
    struct stat st {};
    if (::stat(file.c_str(), &st) != 0) continue;  // reading it will say what is wrong
    const auto [it, added] = seen.try_emplace({st.st_dev, st.st_ino}, &file);
    if (!added) throw InputError(file, "", "is given twice (also as " + *it->second + "); give each rank's trace once");
  }
  return files;
}

namespace {

// What reading one file gave: its rank (with the strings it interned in a table of its own), or
// the error it raised, and what it logged, kept to be replayed in file order.
struct FileRead {
  std::optional<TraceRank> rank;  // none when skipped or failed, and once merged into the set
  bool skipped = false;           // a file with no CPU or GPU events among other ranks' files
  StringTable strings;
  std::vector<std::pair<LogLevel, std::string>> messages;
  std::exception_ptr error;
};

void read_file(const std::string& file, std::size_t file_count, const LoadOptions& options, FileRead& out) {
  Logger log(LogLevel::kDebug, [&out](LogLevel level, const std::string& message) { out.messages.emplace_back(level, message); });
  try {
    const auto importers = make_importers();
    const std::string head = read_head(file);
    if (head.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError(file, "", "empty file");
    const Importer* chosen = nullptr;
    for (const auto& importer : importers) {
      if (importer->sniff(head)) { chosen = importer.get(); break; }
    }
    if (!chosen) throw InputError(file, "", "not a trace format dpro knows (Kineto JSON or dpro native)");
    log.info("reading " + file + " (" + std::string(chosen->format()) + ")");
    TraceRank rank = chosen->read(file, out.strings, options.import, log);
    check_events(rank, out.strings, log);  // bounds, repeats, overlaps: the same for every format
    if (const IterationRepairs mended = detect_iterations(rank, out.strings, options.iteration_marker); mended.any())
      log.warn(file + ": " +
               (mended.duplicates ? std::to_string(mended.duplicates) + " ProfilerStep span(s) recorded again (" +
                                        mended.first_duplicate + " first; the longest of each kept)"
                                  : std::string()) +
               (mended.duplicates && mended.overlaps ? "; " : "") +
               (mended.overlaps ? std::to_string(mended.overlaps) + " step(s) overlapping the one before (" +
                                      mended.first_overlap + " first; the earlier one cut where the next begins" +
                                      (mended.dropped ? ", " + std::to_string(mended.dropped) + " left empty and dropped" : "") + ")"
                                : std::string()));
    bool any_work = false;
    for (const Event& e : rank.events) {
      if (is_cpu_side(e.kind) || is_gpu_work(e.kind)) { any_work = true; break; }
    }
    if (!any_work) {
      // dpro-profile under torchrun also traces the agent process, which starts CUDA but runs
      // nothing on it: among other ranks' files such a file is skipped, alone it is an error.
      if (file_count == 1) throw InputError(file, "traceEvents", "empty trace: no CPU or GPU events");
      log.warn(file + ": no CPU or GPU events (a process that ran nothing on the GPU, such as torchrun's agent); skipped");
      out.skipped = true;
      return;
    }
    out.rank = std::move(rank);
  } catch (...) {
    out.error = std::current_exception();
  }
}

// Moves a rank read with its own string table into the set: its strings are interned into the
// set's table in the order the file interned them, so ids are those a sequential read gives.
void adopt(TraceSet& set, FileRead& read) {
  std::vector<StringId> global(read.strings.size());
  for (std::uint32_t id = 0; id < read.strings.size(); ++id) global[id] = set.strings.intern(read.strings.view(StringId{id}));
  for (Event& e : read.rank->events) e.name = global[e.name.value];
  set.ranks.push_back(std::move(*read.rank));
  read.rank.reset();
  read.strings = StringTable{};  // freed by the thread that merged it, not by the caller at the end
}

// Files merged into the set in file order as soon as each and all before it are read, by the
// thread that finished the last of them, while the other threads go on reading: the merge is off
// the critical path but for the last file's. One thread merges at a time; none merges past a file
// that failed (the caller rethrows its error, and later files must not touch the set).
class InOrderMerge {
 public:
  InOrderMerge(TraceSet& set, std::vector<FileRead>& reads) : set_(set), reads_(reads), read_(reads.size(), false) {}

  // Called by the thread that has just read file `index`.
  void file_read(std::size_t index) {
    {
      std::lock_guard lock(mutex_);
      read_[index] = true;
      if (merging_) return;  // the merging thread will find it
      merging_ = true;
    }
    for (;;) {
      std::size_t index_to_merge = 0;
      {
        std::lock_guard lock(mutex_);
        if (next_ == reads_.size() || !read_[next_] || reads_[next_].error) {
          merging_ = false;
          return;
        }
        index_to_merge = next_;
      }
      FileRead& read = reads_[index_to_merge];
      if (read.rank) {
        try {
          adopt(set_, read);
        } catch (...) {
          // Out of memory, say, on a worker thread: kept as that file's error (the caller
          // rethrows it in file order), and nothing after it is merged.
          std::lock_guard lock(mutex_);
          read.error = std::current_exception();
          merging_ = false;
          return;
        }
      }
      std::lock_guard lock(mutex_);
      ++next_;
    }
  }

 private:
  TraceSet& set_;
  std::vector<FileRead>& reads_;
  std::mutex mutex_;
  std::vector<bool> read_;  // by file index
  std::size_t next_ = 0;    // the first file not merged
  bool merging_ = false;
};

// The order files are started in: largest on disk first (stable), so that the last files taken,
// which decide when the threads finish, are the small ones. The merge order stays file order.
std::vector<std::size_t> largest_first(const std::vector<std::string>& files) {
  std::vector<std::uintmax_t> size(files.size(), 0);
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    const std::uintmax_t bytes = fs::file_size(files[i], ec);
    if (!ec) size[i] = bytes;  // reading it will say what is wrong
  }
  std::vector<std::size_t> order(files.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size[a] > size[b]; });
  return order;
}

// Reads every file, `threads` at a time (one task per file), and merges each rank read into
// `set` in file order. After a failure no file later in file order is started (an earlier one's
// error is the one reported). Returns what each file's read gave, its rank moved into `set`.
std::vector<FileRead> read_files(const std::vector<std::string>& files, const LoadOptions& options, TraceSet& set) {
  std::vector<FileRead> reads(files.size());
  InOrderMerge merge(set, reads);
  std::size_t threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, files.size());
  const std::vector<std::size_t> order = threads > 1 ? largest_first(files) : std::vector<std::size_t>{};
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> first_failed{files.size()};
  std::mutex progress_mutex;
  std::size_t started = 0;
  const auto work = [&] {
    for (std::size_t taken = next++; taken < files.size(); taken = next++) {
      const std::size_t i = order.empty() ? taken : order[taken];
      if (i > first_failed.load()) continue;
      if (options.progress) {
        std::lock_guard lock(progress_mutex);
        options.progress(started++, files.size(), files[i]);
      }
      read_file(files[i], files.size(), options, reads[i]);
      if (reads[i].error) {
        std::size_t seen = first_failed.load();
        while (i < seen && !first_failed.compare_exchange_weak(seen, i)) {
        }
      }
      merge.file_read(i);
    }
  };
  if (threads <= 1) {
    work();  // a gzip file is inflated by a thread of its own (ReadAhead) while this one parses
    return reads;
  }
  // Every thread reads files, the caller's included (one thread fewer to start). Each reads
  // gzip inline: the files already keep the cores busy, and a reader thread per file cost its
  // start and its handoffs on every file (most of the fixed cost of a small rank file).
  const auto work_inline = [&] {
    ReadAheadInline on_this_thread;
    work();
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work_inline);
  work_inline();
  for (std::thread& t : pool) t.join();
  return reads;
}

}  // namespace

TraceSet load_traces(const std::vector<std::string>& paths, const LoadOptions& options, Logger& log) {
  const std::vector<std::string> files = expand_trace_paths(paths);
  // Ranks merged in file order as they are read; messages and errors replayed here in file
  // order: messages, errors, ranks and string ids are those of a sequential read.
  TraceSet set;
  const std::vector<FileRead> reads = read_files(files, options, set);
  std::size_t skipped = 0;
  for (const FileRead& read : reads) {
    for (const auto& [level, message] : read.messages) log.log(level, message);
    if (read.error) std::rethrow_exception(read.error);
    if (read.skipped) ++skipped;
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
  check_one_run(set.ranks);
  assign_ranks(set.ranks, log);
  check_complete(set.ranks, options, log);
  if (options.align_clocks) align_clocks(set, log);  // per-host offsets from matched collectives
  return set;
}

}  // namespace dpro::trace
