/*
 * The page Merkle tree both zkvm runtimes keep (zkvm_model.c in native builds, zkvm_exec.c in the
 * RISC-V executor): per node, the segment generation that loaded or dirtied it.
 */
static uint32_t zk_generation = 1; /* the current segment; a new one forgets every mark at once */

/* Mark a page and its ancestors in ``set`` for this segment: the page's cycles plus one node cost
 * per ancestor not yet marked. */
static uint64_t zk_mark(uint32_t *set, uint32_t page) {
    uint32_t node = (1u << ZK_DEPTH) + page;
    uint64_t cost = ZK_PAGE_CYCLES;
    set[node] = zk_generation;
    for (node >>= 1; node >= 1; node >>= 1) {
        if (set[node] == zk_generation) break;
        set[node] = zk_generation;
        cost += ZK_NODE_CYCLES;
    }
    return cost;
}
