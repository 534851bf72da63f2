#include "plugin/xrdcl/context.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/mutex.h"
#include "readahead/bulk_detect.h"
#include "replica/hooks.h"

namespace ferry::plugin {
namespace {

Mutex g_mu;
std::vector<std::shared_ptr<Context>>* g_contexts FERRY_GUARDED_BY(g_mu) =
    nullptr;  // leaked on purpose

void ShutdownAtExit() {
  MutexLock lock(g_mu);
  for (const auto& ctx : *g_contexts) {
    ctx->exiting = true;
    if (ctx->cache) {
      ctx->cache->Shutdown();
    }
  }
}

}  // namespace

std::shared_ptr<Context> MakeContext(const std::map<std::string, std::string>& conf) {
  auto ctx = std::make_shared<Context>();
  auto config = cache::ConfigFromMap(conf, /*use_env=*/true, replica::Hooks().get());
  if (!config) {
    ctx->disabled_reason = config.error().ToString();
  } else {
    ctx->config = *config;
    ctx->config.replica_hooks = replica::Hooks();
    if (ctx->config.dir.empty()) {
      ctx->disabled_reason = "no cache directory (conf key 'dir' or FERRY_CACHE_DIR)";
    } else {
      auto cache = cache::Cache::Get(ctx->config);
      if (cache) {
        ctx->cache = *cache;
      } else {
        ctx->disabled_reason = cache.error().ToString();
      }
    }
  }
  if (!ctx->cache) {
    std::fprintf(stderr, "ferry cache plug-in: caching disabled, reading through: %s\n",
                 ctx->disabled_reason.c_str());
  }
  ctx->copy_tool = ctx->cache != nullptr && ctx->config.bypass
                   && readahead::IsCopyTool(ctx->config.bypass_tools);
  ctx->pool = std::make_unique<WorkerPool>(ctx->config.workers);
  if (ctx->cache && ctx->config.readahead && ctx->config.readahead_next && !ctx->copy_tool) {
    ctx->next_files = std::make_unique<NextFiles>(*ctx);
  }
  MutexLock lock(g_mu);
  if (g_contexts == nullptr) {
    g_contexts = new std::vector<std::shared_ptr<Context>>();
    if (std::atexit(ShutdownAtExit) != 0) {
      std::fprintf(stderr,
                   "ferry cache plug-in: cannot register the exit handler: the "
                   "caches will not be shut down at exit\n");
    }
  }
  g_contexts->push_back(ctx);
  return ctx;
}

}  // namespace ferry::plugin
