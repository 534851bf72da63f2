// ferry recv: the receiving daemon for `ferry send`. Runs until SIGINT or SIGTERM.
#include <csignal>
#include <cstdio>
#include <ctime>
#include <string>

#include "base/json_writer.h"
#include "base/strings.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "xfer/handshake.h"
#include "xfer/net.h"
#include "xfer/protocol.h"
#include "xfer/receiver.h"

namespace ferry::cli {
namespace {

std::string Stamp() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  if (std::strftime(buf, sizeof buf, "%H:%M:%S", &tm) == 0) {
    return "--:--:--";  // buf is indeterminate; cannot happen for this format and size
  }
  return buf;
}

// The options of ferry recv into o; kExitOk, or the usage error's exit code.
int ParseRecvOptions(const Args& a, xfer::ReceiverOptions* o) {
  if (!a.positional().empty() || !a.Has("--listen") || (!a.Has("--root") && !a.Has("--discard"))) {
    return UsageError("need --listen ADDR:PORT and --root DIR (or --discard)", a.spec());
  }
  auto listen = xfer::ParseHostPort(*a.Get("--listen"));
  if (!listen || !listen->rest.empty()) {
    return UsageError("bad --listen address (ADDR:PORT)", a.spec());
  }
  o->listen_addr = listen->host;
  o->port = listen->port;
  o->root = a.Get("--root").value_or("");
  o->discard = a.Has("--discard");
  o->direct_io = !a.Has("--no-direct");
  o->use_uring = !a.Has("--no-uring");
  o->preallocate = !a.Has("--no-preallocate");
  if (auto v = a.Get("--timeout")) {
    auto n = ParseUint(*v);
    if (!n || *n < 1 || *n > 86400) {
      return UsageError("--timeout must be in [1, 86400] seconds", a.spec());
    }
    o->timeout_ms = static_cast<int>(*n * 1000);
  }
  if (auto v = a.Get("--memory")) {
    auto n = ParseSize(*v);
    if (!n || *n < (8u << 20)) {
      return UsageError("--memory must be at least 8M", a.spec());
    }
    o->memory_budget = *n;
  }
  if (auto v = a.Get("--journal-sync-ms")) {
    auto n = ParseUint(*v);
    if (!n || *n < 1 || *n > 600000) {
      return UsageError("--journal-sync-ms must be in [1, 600000]", a.spec());
    }
    o->journal_sync_ms = static_cast<int>(*n);
  }
  if (auto v = a.Get("--token-file")) {
    auto token = xfer::ReadTokenFile(*v);
    if (!token) {
      return ReportError(token.error());
    }
    o->token = *token;
  }
  return kExitOk;
}

// One JSON line per finished session (--json).
void PrintSessionJson(const xfer::SessionSummary& s) {
  JsonWriter w;
  w.BeginObject()
      .Field("event", "session")
      .Field("session", s.session)
      .Field("peer", s.peer)
      .Field("files", static_cast<uint64_t>(s.files))
      .Field("files_done", static_cast<uint64_t>(s.files_done))
      .Field("files_failed", static_cast<uint64_t>(s.files_failed))
      .Field("files_skipped", static_cast<uint64_t>(s.files_skipped))
      .Field("bytes", s.bytes)
      .Field("seconds", s.seconds)
      .Field("gbit_per_s", s.seconds > 0 ? static_cast<double>(s.bytes) * 8 / s.seconds / 1e9 : 0.0)
      .Field("bad_blocks", s.bad_blocks)
      .Field("final_flush_max", s.final_flush_max)
      .Field("streams", static_cast<int64_t>(s.streams))
      .Field("direct_io", s.direct_io)
      .Field("io_uring", s.uring)
      .Field("digest", xfer::DigestHex(s.digest))
      .Field("error", s.error);
  xfer::WriteStagesJson(w, s.stages, s.queues);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
  // A monitor that stopped reading the JSON lines must not stop the transfer.
  (void)std::fflush(stdout);
}

// The start in the log (with a warning when anyone may write) and, with --json, as a line.
void AnnounceListening(const xfer::ReceiverOptions& o, uint16_t port, bool json) {
  if (o.token.empty() && !o.discard) {
    o.on_log("warning: no --token-file: any client that reaches this port can write under "
             + o.root);
  }
  o.on_log("listening on " + (o.listen_addr.empty() ? "*" : o.listen_addr) + ":"
           + std::to_string(port)
           + (o.discard ? ", discarding every block (--discard)" : ", root " + o.root));
  if (json) {
    JsonWriter w;
    w.BeginObject()
        .Field("event", "listening")
        .Field("address", o.listen_addr)
        .Field("port", static_cast<uint64_t>(port))
        .Field("root", o.root)
        .Field("discard", o.discard)
        .EndObject();
    std::printf("%s\n", w.str().c_str());
    (void)std::fflush(stdout);  // as above: best effort for the monitor
  }
}

// SIGINT/SIGTERM are taken synchronously (sigtimedwait); blocked before any thread starts so
// every thread inherits the mask.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  (void)signal(SIGPIPE, SIG_IGN);  // fails only for an invalid signal number
  return stop_signals;
}

int RunRecv(const Args& a) {
  xfer::ReceiverOptions o;
  if (int rc = ParseRecvOptions(a, &o); rc != kExitOk) {
    return rc;
  }
  const bool json = a.Has("--json");
  o.on_log = [](std::string_view line) {
    std::fprintf(stderr, "%s ferry recv: %.*s\n", Stamp().c_str(), static_cast<int>(line.size()),
                 line.data());
  };
  if (json) {
    o.on_session = PrintSessionJson;
  }
  const sigset_t stop_signals = BlockStopSignals();
  auto rx = xfer::Receiver::Start(o);
  if (!rx) {
    return ReportError(rx.error());
  }
  AnnounceListening(o, (*rx)->port(), json);
  int sig = 0;
  // A daemon: waits for a stop signal (in bounded slices, so the loop stays responsive).
  while (sig <= 0) {
    timespec slice{1, 0};
    sig = sigtimedwait(&stop_signals, nullptr, &slice);
  }
  o.on_log("stopping on signal " + std::to_string(sig));
  (*rx)->Stop();
  return kExitOk;
}

constexpr OptionSpec kRecvOptions[] = {
    {"--listen", "ADDR:PORT", "where to listen; port 0 picks a free port"},
    {"--root", "DIR", "every file lands under DIR (paths are confined)"},
    {"--token-file", "F", "the shared secret both ends prove they know"},
    {"--json", "", "one JSON object per line on stdout: the listening address, then each session"},
    {"--timeout", "SECONDS", "handshake and stall limit", "30"},
    {"--no-direct", "", "page-cache writes (for filesystems that refuse O_DIRECT)"},
    {"--no-uring", "", "pwrite(2) instead of io_uring"},
    {"--no-preallocate", "", "no fallocate of the whole file up front"},
    {"--discard", "",
     "verify and acknowledge every block, write nothing: measures the network and ferry's "
     "streams without the destination disk (the sender is told)"},
    {"--memory", "B", "block buffers shared by all sessions", "2G"},
    {"--journal-sync-ms", "N",
     "how often verified blocks are made durable and journalled, for a resumed send", "1000"},
};

}  // namespace

constexpr CommandSpec kRecvCommand{
    .path = "recv",
    .summary = "receive transfers from ferry send (daemon)",
    .synopsis = "--listen ADDR:PORT (--root DIR | --discard)",
    .options = kRecvOptions,
    .notes =
        "Serves transfers until SIGINT/SIGTERM; every file is renamed into place only when "
        "complete\nand verified.",
    .run = RunRecv,
};

}  // namespace ferry::cli
