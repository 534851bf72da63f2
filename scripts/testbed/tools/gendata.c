/* ferry test bed: deterministic pseudo-random test files of given sizes.
 *
 *   ferry_tb_gendata [--seed N] [--keep] SIZE FILE...
 *
 * SIZE is bytes with an optional K, M or G suffix (powers of 1024). File i (0-based) gets the
 * byte stream of xorshift64* seeded with N + i, so the same arguments always give the same
 * bytes and different files differ. Each file is written to FILE.tmp and renamed into place.
 * --keep leaves a FILE that already has SIZE bytes alone (its content is not checked).
 * Random bytes do not compress, so codecs and caches cannot shortcut them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int parse_size(const char* s, uint64_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) {
    return -1;
  }
  uint64_t mul = 1;
  if (*end == 'K' || *end == 'k') {
    mul = 1ull << 10;
    end++;
  } else if (*end == 'M' || *end == 'm') {
    mul = 1ull << 20;
    end++;
  } else if (*end == 'G' || *end == 'g') {
    mul = 1ull << 30;
    end++;
  }
  if (*end != '\0' || v > UINT64_MAX / mul) {
    return -1;
  }
  *out = (uint64_t)v * mul;
  return 0;
}

static int write_file(const char* path, uint64_t size, uint64_t seed) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    fprintf(stderr, "gendata: path too long\n");
    return -1;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    fprintf(stderr, "gendata: %s: %s\n", tmp, strerror(errno));
    return -1;
  }
  static uint64_t buf[1 << 17]; /* 1 MiB */
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  uint64_t left = size;
  while (left > 0) {
    for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) {
      x ^= x >> 12;
      x ^= x << 25;
      x ^= x >> 27;
      buf[i] = x * 0x2545F4914F6CDD1Dull;
    }
    size_t n = left < sizeof buf ? (size_t)left : sizeof buf;
    const char* p = (const char*)buf;
    size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd, p + done, n - done);
      if (w < 0 && errno == EINTR) {
        continue;
      }
      if (w <= 0) {
        fprintf(stderr, "gendata: write %s: %s\n", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        return -1;
      }
      done += (size_t)w;
    }
    left -= n;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    fprintf(stderr, "gendata: %s: %s\n", path, strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  uint64_t seed = 1, size = 0;
  int keep = 0, i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--keep") == 0) {
      keep = 1;
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      seed = strtoull(argv[++i], NULL, 10);
    } else {
      break;
    }
  }
  if (argc - i < 2 || parse_size(argv[i], &size) != 0) {
    fprintf(stderr, "usage: %s [--seed N] [--keep] SIZE[K|M|G] FILE...\n", argv[0]);
    return 2;
  }
  for (int f = i + 1; f < argc; f++) {
    struct stat st;
    if (keep && stat(argv[f], &st) == 0 && (uint64_t)st.st_size == size) {
      continue;
    }
    if (write_file(argv[f], size, seed + (uint64_t)(f - i - 1)) != 0) {
      return 1;
    }
  }
  return 0;
}
