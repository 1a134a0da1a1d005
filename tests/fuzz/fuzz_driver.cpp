// The stand-in for libFuzzer's main() in builds without it (g++, or clang without
// -DDPRO_FUZZ=ON): runs a fuzz target's LLVMFuzzerTestOneInput on every file of the corpus
// folders given (the seeds and the regressions), then on `--mutations N` inputs made from them
// by a few byte-level edits with a fixed random seed, so a ctest run is repeatable. A crash,
// an oracle's abort or an exception the target lets through ends the run; the input that did
// it is written to `fuzz-finding-<target>` in the working folder first (replay it with
// `<target> FILE`), as libFuzzer writes crash-<sha1>.
//
//   fuzz_<target> [--mutations N] [--seed S] [--max-len BYTES] FILE_OR_DIR...
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
// Present when a sanitizer is linked in: called when it ends the process on a finding (ASan
// exits with _exit(1), raising no signal).
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

// The input being run, for the crash handler (async-signal-safe: a fixed buffer and write(2)).
const std::string* g_current = nullptr;
char g_finding_path[4096] = "fuzz-finding";

void save_current() {
  if (!g_current) return;
  const int fd = ::open(g_finding_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < g_current->size()) {
    const ssize_t n = ::write(fd, g_current->data() + done, g_current->size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  const char msg[] = "fuzz driver: the failing input is saved as ";
  [[maybe_unused]] auto r = ::write(2, msg, sizeof msg - 1);
  r = ::write(2, g_finding_path, std::strlen(g_finding_path));
  r = ::write(2, "\n", 1);
}

// The handlers before ours (a sanitizer's, or the default), run after the input is saved: a
// fault returns to the faulting instruction, which faults again into the old handler; abort()'s
// signal is raised again, delivered to it when this handler returns.
struct sigaction g_previous[NSIG];

extern "C" void on_fatal_signal(int sig) {
  save_current();
  ::sigaction(sig, &g_previous[sig], nullptr);
  if (sig == SIGABRT) std::raise(sig);
}

void on_terminate() {
  save_current();
  std::abort();
}

std::vector<std::string> corpus_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const auto& a : args) {
    if (fs::is_directory(a)) {
      for (const auto& e : fs::recursive_directory_iterator(a))
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path().string());
    } else if (fs::is_regular_file(a)) {
      files.push_back(a);
    } else {
      std::cerr << "fuzz driver: " << a << ": no such file or folder\n";
      std::exit(2);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One to four edits of the kinds libFuzzer starts with: flip a bit, set a byte to an
// interesting value, erase a range, duplicate a range, insert bytes, truncate.
std::string mutate(std::string s, std::mt19937_64& rng, std::size_t max_len) {
  auto pick = [&](std::size_t n) { return n == 0 ? std::size_t{0} : static_cast<std::size_t>(rng() % n); };
  static const unsigned char kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, '"', '\\', '{', '}', '[', ']', ',', ':',
                                               '-', '9', 'e', '\n', 0xc3, 0xed, 0xf4};
  const int edits = 1 + static_cast<int>(pick(4));
  for (int i = 0; i < edits; ++i) {
    switch (pick(6)) {
      case 0: if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << pick(8)); break;
      case 1: if (!s.empty()) s[pick(s.size())] = static_cast<char>(kInteresting[pick(sizeof kInteresting)]); break;
      case 2: if (!s.empty()) { const auto at = pick(s.size()); s.erase(at, 1 + pick(std::min<std::size_t>(64, s.size() - at))); } break;
      case 3: if (!s.empty()) { const auto at = pick(s.size()); const auto n = 1 + pick(std::min<std::size_t>(64, s.size() - at)); s.insert(pick(s.size() + 1), s.substr(at, n)); } break;
      case 4: { std::string bytes(1 + pick(8), '\0'); for (auto& c : bytes) c = static_cast<char>(rng()); s.insert(pick(s.size() + 1), bytes); } break;
      default: s.resize(pick(s.size() + 1)); break;
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

void run_one(const std::string& input) {
  g_current = &input;
  LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
  g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mutations = 0, seed = 1;
  std::size_t max_len = 1 << 20;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--mutations" || a == "--seed" || a == "--max-len") && i + 1 < argc) {
      const std::uint64_t v = std::strtoull(argv[++i], nullptr, 10);
      if (a == "--mutations") mutations = v;
      else if (a == "--seed") seed = v;
      else max_len = static_cast<std::size_t>(v);
    } else {
      paths.push_back(a);
    }
  }
  const std::string target = fs::path(argv[0]).filename().string();
  std::snprintf(g_finding_path, sizeof g_finding_path, "fuzz-finding-%s", target.c_str());
  for (int sig : {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
    struct sigaction action {};
    action.sa_handler = on_fatal_signal;
    ::sigemptyset(&action.sa_mask);
    ::sigaction(sig, &action, &g_previous[sig]);
  }
  std::set_terminate(on_terminate);
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(save_current);

  const auto files = corpus_files(paths);
  std::vector<std::string> corpus;
  for (const auto& f : files) corpus.push_back(read_file(f));
  const auto start = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    std::cerr << "fuzz driver: " << files[i] << "\n";
    run_one(corpus[i]);
  }
  std::mt19937_64 rng(seed);
  for (std::uint64_t i = 0; i < mutations && !corpus.empty(); ++i)
    run_one(mutate(corpus[static_cast<std::size_t>(rng() % corpus.size())], rng, max_len));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::uint64_t runs = corpus.size() + (corpus.empty() ? 0 : mutations);
  std::cout << "{\"fuzz_target\": \"" << target << "\", \"corpus_files\": " << corpus.size()
            << ", \"mutations\": " << (corpus.empty() ? 0 : mutations) << ", \"executions\": " << runs
            << ", \"seconds\": " << s << ", \"exec_per_s\": " << (s > 0 ? runs / s : 0) << "}\n";
  return 0;
}
