#include "cmd_convert.h"

#include <cstdio>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "output_file.h"
#include "trace/native/chrome_export.h"
#include "trace/native/native_importer.h"

namespace dpro::cli {
namespace {

class ConvertCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& parent) override {
    CLI::App* sub = parent.add_subcommand(
        "convert", "Convert a dpro-profile native trace (.dpro, .dpro.gz) to Kineto-style Chrome JSON\n"
                   "(.json, or gzip-compressed .json.gz) that opens in ui.perfetto.dev.");
    sub->add_option("input", input_, "native trace file")->required();
    sub->add_option("-o,--output", output_, "output JSON file (.json or .json.gz; '-' = stdout)")->required();
    sub->add_flag("--force", force_, "overwrite an existing output file");
    sub->add_flag("-q,--quiet", quiet_, "print only errors");
    return sub;
  }

  int run() override {
    Logger log(quiet_ ? LogLevel::kError : LogLevel::kWarning);
    check_output_path(output_, {input_}, force_);
    StringTable strings;
    auto rank = trace::make_native_importer()->read(input_, strings, {}, log);
    std::ostringstream json;
    trace::write_chrome_json(rank, strings, json);
    write_output(output_, [&](std::ostream& out) { out << json.str(); }, force_);
    if (!quiet_ && output_ != "-")
      std::fprintf(stderr, "dpro-replay: %zu events of rank %d written to %s\n", rank.events.size(),
                   rank.rank, output_.c_str());
    return 0;
  }

 private:
  std::string input_, output_;
  bool force_ = false, quiet_ = false;
};

}  // namespace

std::unique_ptr<Command> make_convert_command() { return std::make_unique<ConvertCommand>(); }

}  // namespace dpro::cli
