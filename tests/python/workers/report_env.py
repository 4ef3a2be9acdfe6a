"""Prints what the runtime learned about this rank's place in the world."""

import kolo

kolo.init()
rank = kolo.rank()
print(f"rank {rank} size {kolo.size()} local {kolo.local_rank()}/{kolo.local_size()} "
      f"cross {kolo.cross_rank()}/{kolo.cross_size()}")
kolo.shutdown()
print(f"rank {rank} OK")
