"""The estimates a fix states and an observation or a search tries, defined once for both: the
DataLoader workers that hide a wait on storage (workers), the thread count beside busy workers
(threads), whether input sizes vary (shapes). Torch-free: the diagnosing process, which only
reads a Record, imports them."""
