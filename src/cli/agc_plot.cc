#include "cli/agc_plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ferry::cli {
namespace {

using analysis::Histogram;
using analysis::Observable;
using analysis::Variation;

// Runs argv, waiting at most `limit`; the child is killed (by its PID) when it overruns.
Status RunBounded(const std::vector<std::string>& argv, std::chrono::seconds limit) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);  // + the terminating nullptr
  for (const std::string& a : argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    return IoError("fork", errno);
  }
  if (pid == 0) {
    execvp(args[0], args.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      break;
    }
    if (r < 0 && errno != EINTR) {
      return IoError("waitpid", errno);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Error(ErrorCode::kTimeout,
                   argv[0] + " did not finish within " + std::to_string(limit.count()) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return NotFoundError(argv[0] + " is not installed (apt-get install gnuplot-nox)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Error(ErrorCode::kIo, argv[0] + " failed (status " + std::to_string(status) + ")");
  }
  return OkStatus();
}

// gnuplot strings are single-quoted; a quote inside is doubled.
std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') {
      out += '\'';
    }
  }
  return out + "'";
}

}  // namespace

Status PlotAgc(const analysis::AgcReport& report, const std::string& out_png) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "ferry-plot.XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    return IoError("mkdtemp " + tmpl, errno);
  }
  const std::filesystem::path dir = tmpl;
  struct Cleanup {
    std::filesystem::path dir;
    explicit Cleanup(std::filesystem::path d) : dir(std::move(d)) {}
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
    Cleanup(const Cleanup&) = delete;
    Cleanup& operator=(const Cleanup&) = delete;
  } cleanup{dir};

  // One data file per observable: bin low edge, then nominal, up, down contents.
  std::string script = "set terminal pngcairo size 1500,500 font ',10'\nset output "
                       + Quote(out_png) + "\nset multiplot layout 1,3 title "
                       + Quote("ferry analyze agc: " + std::to_string(report.stats.events)
                               + " events, digest " + analysis::DigestHex(report.result.Digest()))
                       + "\nset grid\nset key top right\nset style data steps\n";
  for (Observable o : analysis::kObservables) {
    const std::filesystem::path data = dir / (std::string(analysis::ObservableName(o)) + ".dat");
    std::ofstream f(data);
    const Histogram& nominal = report.result.histogram(Variation::kNominal, o);
    double top = 0;
    for (Variation v : analysis::kVariations) {
      for (double c : report.result.histogram(v, o).contents()) {
        top = std::max(top, c);
      }
    }
    for (int b = 1; b <= nominal.bins() + 1; ++b) {
      // The last row repeats the last bin so the step line closes at the upper edge.
      const int src = std::min(b, nominal.bins());
      f << nominal.BinLowEdge(b);
      for (Variation v : analysis::kVariations) {
        f << ' ' << report.result.histogram(v, o).contents()[static_cast<size_t>(src)];
      }
      f << '\n';
    }
    if (!f) {
      return IoError("cannot write " + data.string(), errno);
    }
    // An empty region (the template may have no such events) says so instead of a bare axis.
    script += top > 0 ? "unset label 1\n"
                      : "set label 1 'no events in this region' at graph 0.5,0.5 center\n";
    script += "set title " + Quote(std::string(analysis::ObservableTitle(o))) +
              "\nset xlabel " + Quote(std::string(analysis::ObservableTitle(o))) +
              "\nset ylabel 'events / bin'\nset yrange [0:" + std::to_string(top > 0 ? top * 1.15 : 1.0) +
              "]\nplot " + Quote(data.string()) +
              " using 1:2 lw 2 lc rgb '#1f4e9c' title 'nominal', '' using 1:3 lw 1 lc rgb "
              "'#c0392b' title 'JES up', '' using 1:4 lw 1 lc rgb '#27ae60' title 'JES down'\n";
  }
  script += "unset multiplot\n";
  const std::filesystem::path script_path = dir / "plot.gp";
  {
    std::ofstream s(script_path);
    s << script;
    if (!s) {
      return IoError("cannot write " + script_path.string(), errno);
    }
  }
  return RunBounded({"gnuplot", script_path.string()}, std::chrono::seconds(60));
}

}  // namespace ferry::cli
