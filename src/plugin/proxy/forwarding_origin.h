// ForwardingOrigin: an Origin that hands every call to another one. The proxy wraps each file's
// origin handle in layers (MeteredOrigin counts, GatedOrigin limits per origin); each layer
// overrides only what it changes and inherits the rest from here.
// Thread-safety: as the inner origin's.
#pragma once

#include <memory>
#include <span>
#include <utility>

#include "cache/origin.h"

namespace ferry::proxy {

class ForwardingOrigin : public cache::Origin {
 public:
  explicit ForwardingOrigin(std::shared_ptr<cache::Origin> inner) : inner_(std::move(inner)) {}

  Result<cache::OriginInfo> Stat() override { return inner_->Stat(); }
  void Read(std::span<cache::OriginRead> reads) override { inner_->Read(reads); }
  size_t channels() const override { return inner_->channels(); }
  bool channel_ready(size_t channel) const override { return inner_->channel_ready(channel); }
  void PrepareChannels() override { inner_->PrepareChannels(); }

 protected:
  cache::Origin& inner() { return *inner_; }

 private:
  std::shared_ptr<cache::Origin> inner_;
};

}  // namespace ferry::proxy
