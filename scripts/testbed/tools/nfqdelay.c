/* ferry test bed: constant packet delay through NFQUEUE (this kernel has no sch_netem).
 *
 * An iptables rule hands packets to an NFQUEUE; this program keeps each one for a fixed time
 * and then lets it go (NF_ACCEPT). With one constant delay the release order is the arrival
 * order, so a single batch verdict ("accept everything up to packet id N") releases all
 * packets that are due. Only metadata is copied to user space (NFQNL_COPY_META), GSO packets
 * stay whole, and the queue fails open: when it is full the kernel accepts instead of dropping.
 *
 * Put the rule on the receiving side (mangle PREROUTING -i <veth>): there the packet no longer
 * counts against the sender's socket (TCP small queues), as with netem, which orphans skbs.
 *
 *   ferry_tb_nfqdelay --queues FIRST[-LAST] --delay-us N [--ready-file F]
 *                     [--max-held N] [--lifetime-s S]
 *
 * --queues: binds the first free queue number of the range (another run may own some) and
 *   writes it to --ready-file (atomically: tmp + rename) once packets can flow.
 * --lifetime-s: exits by itself after S seconds (default 86400) so it can never linger.
 * SIGTERM/SIGINT: releases every held packet and exits 0. Exit 1 on setup errors.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct held {
  uint32_t id;
  uint64_t due_ns;
};

static struct held* fifo;
static uint32_t fifo_cap = 262144; /* power of two */
static uint64_t fifo_head, fifo_tail; /* tail - head = packets held */
static uint64_t delay_ns;
static uint64_t seen, passed_full;
static volatile sig_atomic_t stopping;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle* qh, struct nfgenmsg* msg, struct nfq_data* nfa,
                     void* arg) {
  (void)msg;
  (void)arg;
  struct nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph == NULL) {
    return 0;
  }
  uint32_t id = ntohl(ph->packet_id);
  seen++;
  if (fifo_tail - fifo_head >= fifo_cap) {
    /* Full: this packet goes undelayed. Accepting it alone would also accept nothing else
     * (single verdict), and later batch verdicts cover lower ids only when they are due. */
    passed_full++;
    return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
  }
  struct held* h = &fifo[fifo_tail & (fifo_cap - 1)];
  h->id = id;
  h->due_ns = mono_ns() + delay_ns;
  fifo_tail++;
  return 0;
}

/* Accepts every packet due at `now` (all of them when all != 0) with one batch verdict. */
static void release(struct nfq_q_handle* qh, uint64_t now, int all) {
  int any = 0;
  uint32_t last = 0;
  while (fifo_head != fifo_tail) {
    const struct held* h = &fifo[fifo_head & (fifo_cap - 1)];
    if (!all && h->due_ns > now) {
      break;
    }
    last = h->id;
    any = 1;
    fifo_head++;
  }
  if (any) {
    nfq_set_verdict_batch(qh, last, NF_ACCEPT);
  }
}

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static void usage(const char* argv0) {
  fprintf(stderr,
          "usage: %s --queues FIRST[-LAST] --delay-us N [--ready-file F] [--max-held N] "
          "[--lifetime-s S]\n",
          argv0);
}

static int write_ready(const char* path, int queue) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
    return -1;
  }
  FILE* f = fopen(tmp, "w");
  if (f == NULL) {
    return -1;
  }
  fprintf(f, "%d\n", queue);
  if (fclose(f) != 0) {
    return -1;
  }
  return rename(tmp, path);
}

int main(int argc, char** argv) {
  long first = -1, last = -1, lifetime_s = 86400;
  unsigned long long delay_us = 0;
  unsigned long max_held = 0;
  const char* ready_file = NULL;
  static const struct option opts[] = {{"queues", required_argument, NULL, 'q'},
                                       {"delay-us", required_argument, NULL, 'd'},
                                       {"ready-file", required_argument, NULL, 'r'},
                                       {"max-held", required_argument, NULL, 'm'},
                                       {"lifetime-s", required_argument, NULL, 'l'},
                                       {NULL, 0, NULL, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    char* end = NULL;
    switch (c) {
      case 'q':
        first = strtol(optarg, &end, 10);
        last = (*end == '-') ? strtol(end + 1, &end, 10) : first;
        if (*end != '\0') {
          first = -1;
        }
        break;
      case 'd':
        delay_us = strtoull(optarg, NULL, 10);
        break;
      case 'r':
        ready_file = optarg;
        break;
      case 'm':
        max_held = strtoul(optarg, NULL, 10);
        break;
      case 'l':
        lifetime_s = strtol(optarg, NULL, 10);
        break;
      default:
        usage(argv[0]);
        return 2;
    }
  }
  if (first < 0 || last < first || last > 65535 || delay_us == 0 || lifetime_s <= 0) {
    usage(argv[0]);
    return 2;
  }
  delay_ns = delay_us * 1000ull;
  if (max_held > 0) {
    fifo_cap = 1;
    while (fifo_cap < max_held && fifo_cap < (1u << 24)) {
      fifo_cap <<= 1;
    }
  }
  fifo = calloc(fifo_cap, sizeof *fifo);
  if (fifo == NULL) {
    perror("calloc");
    return 1;
  }

  struct nfq_handle* h = nfq_open();
  if (h == NULL) {
    perror("nfq_open (needs CAP_NET_ADMIN and nfnetlink_queue)");
    return 1;
  }
  struct nfq_q_handle* qh = NULL;
  int queue = -1;
  for (long q = first; q <= last && qh == NULL; q++) {
    qh = nfq_create_queue(h, (uint16_t)q, on_packet, NULL);
    if (qh != NULL) {
      queue = (int)q;
    }
  }
  if (qh == NULL) {
    fprintf(stderr, "nfqdelay: no free queue in %ld-%ld\n", first, last);
    nfq_close(h);
    return 1;
  }
  if (nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
    perror("nfq_set_mode");
    return 1;
  }
  if (nfq_set_queue_maxlen(qh, fifo_cap) < 0) {
    perror("nfq_set_queue_maxlen");
  }
  const uint32_t flags = NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO;
  if (nfq_set_queue_flags(qh, flags, flags) < 0) {
    perror("nfq_set_queue_flags");
  }
  int fd = nfq_fd(h);
  nfnl_rcvbufsiz(nfq_nfnlh(h), 32u << 20);
  int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, sizeof one);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);

  if (ready_file != NULL && write_ready(ready_file, queue) != 0) {
    perror("ready file");
    return 1;
  }
  fprintf(stderr, "nfqdelay: queue %d, delay %llu us, up to %u packets held\n", queue, delay_us,
          fifo_cap);

  const uint64_t end_ns = mono_ns() + (uint64_t)lifetime_s * 1000000000ull;
  static char buf[1 << 16] __attribute__((aligned(8)));
  while (!stopping) {
    uint64_t now = mono_ns();
    if (now >= end_ns) {
      fprintf(stderr, "nfqdelay: lifetime of %ld s reached\n", lifetime_s);
      break;
    }
    uint64_t wait_ns = 200000000ull; /* wake up at least every 200 ms */
    if (fifo_head != fifo_tail) {
      uint64_t due = fifo[fifo_head & (fifo_cap - 1)].due_ns;
      uint64_t until = due > now ? due - now : 0;
      if (until < wait_ns) {
        wait_ns = until;
      }
    }
    struct timespec to = {(time_t)(wait_ns / 1000000000ull), (long)(wait_ns % 1000000000ull)};
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = ppoll(&pfd, 1, &to, NULL);
    if (r < 0 && errno != EINTR) {
      perror("ppoll");
      break;
    }
    if (r > 0) {
      /* Drain what is there; bounded by the socket buffer. */
      for (int i = 0; i < 100000; i++) {
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n < 0) {
          break;
        }
        nfq_handle_packet(h, buf, (int)n);
      }
    }
    release(qh, mono_ns(), 0);
  }
  release(qh, 0, 1);
  fprintf(stderr, "nfqdelay: done, %llu packets, %llu passed undelayed (queue full)\n",
          (unsigned long long)seen, (unsigned long long)passed_full);
  nfq_destroy_queue(qh);
  nfq_close(h);
  free(fifo);
  return 0;
}
