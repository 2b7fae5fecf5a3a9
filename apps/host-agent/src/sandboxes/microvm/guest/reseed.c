/* Forces the guest kernel's CRNG to reseed from its input pool (RNDRESEEDCRNG), right after the host's
 * fresh entropy was written there. Warm-pool guests are restored from one snapshot and share its CRNG
 * state; a write to /dev/urandom only mixes the input pool, and the CRNG reseeds from it lazily and by
 * time, so without this two jobs could read the same "random" bytes (ADR 0011). Built static at asset
 * time, when the host has a C compiler; the guest has no libc of its own. */
#include <fcntl.h>
#include <linux/random.h>
#include <sys/ioctl.h>
int main(void) {
  int fd = open("/dev/urandom", O_WRONLY);
  if (fd < 0) return 1;
  return ioctl(fd, RNDRESEEDCRNG) == 0 ? 0 : 2;
}
