// Routes ferry's logger (base/log.h) into XrdCl's log inside the client plug-in.
#pragma once

namespace ferry::plugin {

// Unless FERRY_LOG is set (then ferry keeps its own stderr lines at that level), ferry's lines
// go to XrdCl's log under the topic "Ferry", at the threshold XrdCl shows (XRD_LOGLEVEL), so
// `XRD_LOGLEVEL=Debug` shows ferry's messages among XRootD's. Idempotent; thread-safe.
void RouteLogThroughXrdCl();

}  // namespace ferry::plugin
