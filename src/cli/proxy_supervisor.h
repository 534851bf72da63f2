// `ferry proxy run`'s supervision of its xrootd: a server that dies of a signal (a crash, the
// OOM killer, kill -9) is started again at once with the same configuration, on the same
// cache, so that clients recover through XrdCl's retry instead of losing the site's cache.
//
// Each restart is logged with the signal, the peer whose request the dying thread was reading
// (from the connection guard preloaded into xrootd: plugin/proxy/xrd_guard.c, guard_map.h)
// and the peers accepted last, and counted in DIR/proxy-supervisor.json (read by `ferry proxy
// metrics`). Entries written while the dead server ran are verified before the new one starts
// (every other page is checked against its CRC32C, or its seal, when read): sealed pages under
// `master_key`, without which an encrypted entry is left to the per-read check. A peer named as the
// crash's source `refuse_after` times within `refuse_window_s` is refused for `refuse_for_s`: the
// guard closes its connections at accept.
//
// The supervisor binds xrootd's ports itself and hands the listening sockets to each xrootd
// it starts (systemd's LISTEN_FDS protocol, which XRootD's XrdInet::BindSD takes): while a
// crashed server is replaced, new connections wait in the socket's backlog instead of being
// refused, so a client's reconnect does not fail and wait out XrdCl's connection window.
//
// The children preload the guard with a lifeline (FERRY_GUARD_LIFELINE): when ferry itself is
// killed, they end too, instead of holding the port as orphans.
//
// A server that exits by itself (a configuration error, an operator's SIGTERM to it) is not
// restarted: Supervise returns its status. SIGTERM/SIGINT to ferry stop every child.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "cache/page_seal.h"

namespace ferry::cli {

struct SupervisorOptions {
  std::vector<std::string> xrootd_argv;
  std::vector<std::string> cmsd_argv;   // empty: no cmsd
  std::vector<std::string> xrootd_env;  // NAME=VALUE set for xrootd
  std::vector<std::string> cmsd_env;    // and for cmsd
  std::vector<int> listen_ports;        // bound here, handed to xrootd (LISTEN_FDS)
  std::string guard_map;                // the guard's shared file (created here); "": no guard
  std::string cache_dir;                // proxy-supervisor.json and the entries to verify
  std::shared_ptr<const cache::MasterKey> master_key;  // of an encrypted cache (else null)
  std::vector<std::string> data_dirs;  // the other cache disks, whose entries are verified too
  uid_t owner_uid = 0;                 // the account xrootd drops to (owns guard_map)
  gid_t owner_gid = 0;
  int refuse_after = 3;
  int refuse_window_s = 600;
  int refuse_for_s = 600;
};

// Runs until the children are stopped; returns the exit status for ferry.
int Supervise(const SupervisorOptions& options);

}  // namespace ferry::cli
