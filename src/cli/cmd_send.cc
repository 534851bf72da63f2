// ferry send: move files and directory trees to a `ferry recv` daemon over parallel streams.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "base/json_writer.h"
#include "base/progress.h"
#include "base/strings.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "xfer/handshake.h"
#include "xfer/net.h"
#include "xfer/protocol.h"
#include "xfer/sender.h"
#include "xfer/tuning.h"

namespace ferry::cli {
namespace {

// "10G" / "2.5G" / "500M" / "1000000" -> bits per second.
Result<uint64_t> ParseRate(std::string_view text) {
  std::string t(text);
  double mult = 1;
  if (!t.empty()) {
    switch (t.back()) {
      case 'k':
      case 'K':
        mult = 1e3;
        break;
      case 'm':
      case 'M':
        mult = 1e6;
        break;
      case 'g':
      case 'G':
        mult = 1e9;
        break;
      default:
        break;
    }
    if (mult != 1) {
      t.pop_back();
    }
  }
  auto v = ParseDouble(t);
  if (!v || *v <= 0) {
    return InvalidArgumentError("bad rate '" + std::string(text) + "' (e.g. 10G, 500M)");
  }
  return static_cast<uint64_t>(*v * mult);
}

std::string Balance(const std::vector<uint64_t>& bytes) {
  if (bytes.empty()) {
    return "";
  }
  auto [lo, hi] = std::minmax_element(bytes.begin(), bytes.end());
  char buf[64];
  std::snprintf(buf, sizeof buf, "%zu streams, min/max %.2f", bytes.size(),
                *hi > 0 ? static_cast<double>(*lo) / static_cast<double>(*hi) : 1.0);
  return buf;
}

void PrintJson(const xfer::SendReport& r, const xfer::SendOptions& o) {
  JsonWriter w;
  double gbit = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
  w.BeginObject()
      .Field("bytes", r.bytes)
      .Field("seconds", r.seconds)
      .Field("gbit_per_s", gbit)
      .Field("steady_gbit_per_s", r.steady_gbit_per_s)
      .Field("streams", static_cast<int64_t>(r.streams))
      .Field("retransmitted_blocks", r.retransmitted_blocks)
      .Field("endgame_copies", r.endgame_copies)
      .Field("digest", xfer::DigestHex(r.digest))
      .Field("digest_algorithm", "xxh3-blocks")
      .Field("total_bytes", r.total_bytes)
      .Field("sent_bytes", r.sent_bytes)
      .Field("blocks_sent", r.blocks_sent)
      .Field("resumed_blocks", r.resumed_blocks)
      .Field("block_size", static_cast<uint64_t>(o.block_size))
      .Field("files", static_cast<uint64_t>(r.files.size()))
      .Field("files_failed", static_cast<uint64_t>(r.files_failed))
      .Field("files_skipped", static_cast<uint64_t>(r.files_skipped))
      .Field("streams_lost", static_cast<int64_t>(r.streams_lost))
      .Field("rtt_ms", r.rtt_us / 1000.0)
      .Field("send_buffer", static_cast<int64_t>(r.send_buffer))
      .Field("congestion", r.congestion)
      .Field("direct_io", r.direct_io)
      .Field("io_uring", r.uring);
  w.Key("stream_bytes").BeginArray();
  for (uint64_t b : r.stream_bytes) {
    w.Uint(b);
  }
  w.EndArray();
  w.Key("errors").BeginArray();
  for (const xfer::FileResult& f : r.files) {
    if (!f.error.empty()) {
      w.BeginObject().Field("path", f.path).Field("error", f.error).EndObject();
    }
  }
  w.EndArray();
  w.Key("notices").BeginArray();
  for (const std::string& n : r.notices) {
    w.String(n);
  }
  w.EndArray();
  xfer::WriteStagesJson(w, r.stages, r.queues);
  w.EndObject();
  std::printf("%s\n", w.str().c_str());
}

// PATH... HOST:PORT[/DEST] into o; kExitOk, or the usage error's exit code.
int ParseTarget(const Args& a, xfer::SendOptions* o) {
  if (a.positional().size() < 2) {
    return UsageError("need at least one PATH and HOST:PORT[/DEST]", a.spec());
  }
  auto target = xfer::ParseHostPort(a.positional().back());
  if (!target || target->port == 0) {
    return UsageError(target ? "port 0 is not a receiver" : target.error().message(), a.spec());
  }
  o->host = target->host;
  o->port = target->port;
  o->dest = target->rest;
  // cp's convention: one source and a target without a trailing '/' names the copy.
  o->dest_is_name = a.positional().size() == 2 && !o->dest.empty() && o->dest.back() != '/';
  while (!o->dest.empty() && o->dest.back() == '/') {
    o->dest.pop_back();
  }
  o->paths.assign(a.positional().begin(), a.positional().end() - 1);
  return kExitOk;
}

// Streams, block size, rates, queue depth, buffers and timeout into o; kExitOk, or the usage
// error's exit code.
int ParseTuning(const Args& a, xfer::SendOptions* o) {
  if (auto v = a.Get("--streams")) {
    auto n = ParseUint(*v);
    if (!n || *n < 1 || *n > static_cast<uint64_t>(xfer::kMaxStreams)) {
      return UsageError("--streams must be in [1, 64]", a.spec());
    }
    o->streams = static_cast<int>(*n);
  }
  if (auto v = a.Get("--block-size")) {
    auto n = ParseSize(*v);
    if (!n || *n < xfer::kMinBlockSize || *n > xfer::kMaxBlockSize || *n % 4096 != 0) {
      return UsageError("--block-size must be a multiple of 4K in [4K, 256M]", a.spec());
    }
    o->block_size = static_cast<uint32_t>(*n);
  }
  for (const char* opt : {"--rate", "--max-rate"}) {
    if (auto v = a.Get(opt)) {
      auto r = ParseRate(*v);
      if (!r) {
        return UsageError(r.error().message(), a.spec());
      }
      (std::string_view(opt) == "--rate" ? o->rate_bps : o->max_rate_bps) = *r;
    }
  }
  if (auto v = a.Get("--queue-depth")) {
    auto n = ParseUint(*v);
    if (!n || *n < 1 || *n > 1024) {
      return UsageError("--queue-depth must be in [1, 1024]", a.spec());
    }
    o->queue_depth = static_cast<unsigned>(*n);
  }
  if (auto v = a.Get("--buffers")) {
    auto n = ParseUint(*v);
    if (!n || *n < 2 || *n > 4096) {
      return UsageError("--buffers must be in [2, 4096]", a.spec());
    }
    o->buffers = static_cast<unsigned>(*n);
  }
  if (auto v = a.Get("--timeout")) {
    auto n = ParseUint(*v);
    if (!n || *n < 1 || *n > 86400) {
      return UsageError("--timeout must be in [1, 86400] seconds", a.spec());
    }
    o->timeout_ms = static_cast<int>(*n * 1000);
  }
  return kExitOk;
}

// Token, congestion control and the resume / direct I/O / io_uring switches into o.
int ParseSessionOptions(const Args& a, xfer::SendOptions* o) {
  if (auto v = a.Get("--token-file")) {
    auto token = xfer::ReadTokenFile(*v);
    if (!token) {
      return ReportError(token.error());
    }
    o->token = *token;
  }
  if (auto v = a.Get("--congestion")) {
    if (v->empty() || v->size() > 15) {
      return UsageError("--congestion needs a name such as cubic or bbr", a.spec());
    }
    o->congestion = std::string(*v);
  }
  o->resume = a.Has("--resume");
  o->direct_io = !a.Has("--no-direct");
  o->use_uring = !a.Has("--no-uring");
  return kExitOk;
}

// The one-line text summary of a send.
void PrintSummary(const xfer::SendReport& r) {
  double gbit = r.seconds > 0 ? static_cast<double>(r.bytes) * 8 / r.seconds / 1e9 : 0;
  std::printf(
      "sent %zu file%s, %s in %.2f s = %.3g Gbit/s over %d %s streams (rtt %.2f ms)%s%s, "
      "digest %s\n",
      r.files.size() - r.files_failed - r.files_skipped, r.files.size() == 1 ? "" : "s",
      HumanBytes(static_cast<double>(r.bytes)).c_str(), r.seconds, gbit, r.streams,
      r.congestion.empty() ? "TCP" : r.congestion.c_str(), r.rtt_us / 1000.0,
      r.retransmitted_blocks > 0
          ? (", " + std::to_string(r.retransmitted_blocks) + " blocks re-sent").c_str()
          : "",
      r.files_skipped > 0 ? (", " + std::to_string(r.files_skipped) + " already complete").c_str()
                          : "",
      xfer::DigestHex(r.digest).c_str());
}

int RunSend(const Args& a) {
  xfer::SendOptions o;
  for (auto parse : {ParseTarget, ParseTuning, ParseSessionOptions}) {
    if (int rc = parse(a, &o); rc != kExitOk) {
      return rc;
    }
  }
  const bool json = a.Has("--json");
  const bool tty = Progress::TerminalEnabled();
  o.on_notice = [&](std::string_view n) {
    std::fprintf(stderr, "%sferry send: %.*s\n", tty ? "\r\033[K" : "", static_cast<int>(n.size()),
                 n.data());
  };
  uint64_t total_seen = 0;
  std::unique_ptr<Progress> bar;
  o.on_progress = [&](const xfer::SendProgress& p) {
    if (!tty) {
      return;
    }
    if (!bar || total_seen != p.bytes_total) {
      total_seen = p.bytes_total;
      bar = std::make_unique<Progress>("send", p.bytes_total);
    }
    bar->Set(p.bytes_done);
    bar->SetNote(Balance(p.stream_bytes));
  };

  auto report = xfer::Send(o);
  if (bar) {
    bar->Finish();
  }
  if (!report) {
    return ReportError(report.error());
  }
  const xfer::SendReport& r = *report;
  for (const xfer::FileResult& f : r.files) {
    if (!f.error.empty()) {
      std::fprintf(stderr, "ferry: error: %s: %s\n", f.path.c_str(), f.error.c_str());
    }
  }
  if (json) {
    PrintJson(r, o);
  } else {
    PrintSummary(r);
  }
  return r.files_failed == 0 ? kExitOk : kExitBadInput;
}

constexpr OptionSpec kSendOptions[] = {
    {"--streams", "N", "TCP streams", "from the measured RTT, --rate and kernel limits"},
    {"--block-size", "B", "checksum and re-send unit (reads are at least 4M)", "4M"},
    {"--token-file", "F",
     "the shared secret both ends prove they know (HMAC-SHA256; it never crosses the wire)"},
    {"--resume", "", "send only the blocks the receiver does not have yet"},
    {"--json", "", "print the transfer's report as one JSON document"},
    {"--rate", "R", "expected bottleneck rate in bit/s (10G, 2G, 500M) for buffer sizing", "10G"},
    {"--max-rate", "R", "pace all streams together to at most R bit/s"},
    {"--congestion", "ALGO", "TCP congestion control of the streams (cubic, bbr, ...)",
     "the system's net.ipv4.tcp_congestion_control"},
    {"--queue-depth", "N", "reads in flight", "16"},
    {"--buffers", "N", "block buffers", "queue depth + 2 x streams"},
    {"--no-direct", "", "page-cache reads (for filesystems that refuse O_DIRECT)"},
    {"--no-uring", "", "read(2) instead of io_uring (for kernels that refuse it)"},
    {"--timeout", "SECONDS", "connect, handshake and stall limit", "30"},
};

}  // namespace

constexpr CommandSpec kSendCommand{
    .path = "send",
    .summary = "send files and directories to a ferry recv daemon",
    .synopsis = "PATH... HOST:PORT[/DEST]",
    .options = kSendOptions,
    .notes =
        "PATH: files and directories; each arrives as DEST/basename(PATH) under the "
        "receiver's root,\nexcept one FILE sent to HOST:PORT/NAME, which arrives as NAME as "
        "with cp (as NAME/FILE\nwhen NAME ends with '/' or is an existing directory on the "
        "receiver).",
    .run = RunSend,
};

}  // namespace ferry::cli
