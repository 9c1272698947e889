/*
 * cfi_read — decoder of the call frame information in .eh_frame / .debug_frame (x86-64 DWARF
 * register numbers), for the collector's unwinder.
 *
 * A table is one section's bytes plus a way to find the FDE for an address: the .eh_frame_hdr
 * binary search table when the module has one in the usual encoding, otherwise a sorted index
 * built once from a walk over all FDEs. Finding and evaluating a row allocates nothing.
 *
 *   .eh_frame_hdr                          .eh_frame
 *   +---------+---------------+            +-----+-----+-----+-----+-----+---+
 *   | 1 enc.. | eh_frame_ptr  |            | CIE | FDE | FDE | CIE | FDE | 0 |
 *   | count   | (pc, fde)[n]  |--datarel-->+-----+-----+-----+-----+-----+---+
 *   +---------+---------------+            FDE: length, CIE pointer, pc_begin, pc_range,
 *                                               augmentation, DW_CFA_* instructions
 */
#ifndef PYEBPF_CFI_READ_H
#define PYEBPF_CFI_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DWARF register numbers (x86-64 psABI). */
enum {
    CFI_REG_RBX = 3,
    CFI_REG_RBP = 6,
    CFI_REG_RSP = 7,
    CFI_REG_R12 = 12,
    CFI_REG_R13 = 13,
    CFI_REG_R14 = 14,
    CFI_REG_R15 = 15,
    CFI_REG_RIP = 16, /* return address column */
    CFI_NREGS = 17,
};

enum cfi_rule_kind {
    CFI_RULE_UNSPEC = 0, /* not mentioned: callee-saved keep their value */
    CFI_RULE_UNDEFINED,  /* explicitly undefined: for the RA, the end of the stack */
    CFI_RULE_SAME,
    CFI_RULE_OFFSET,     /* saved at CFA + off */
    CFI_RULE_VAL_OFFSET, /* value is CFA + off */
    CFI_RULE_REGISTER,   /* in register reg */
    CFI_RULE_EXPR,       /* saved at address computed by expr (CFA pushed first) */
    CFI_RULE_VAL_EXPR,   /* value computed by expr */
};

struct cfi_rule {
    uint8_t kind;
    uint8_t reg;
    uint32_t expr_len;
    int64_t off;
    const uint8_t *expr; /* points into the section bytes */
};

enum cfi_cfa_kind { CFI_CFA_REG = 0, CFI_CFA_EXPR };

struct cfi_row {
    uint64_t pc_start, pc_end; /* link-time addresses where this row holds */
    uint8_t cfa_kind, cfa_reg;
    bool signal_frame;
    uint32_t cfa_expr_len;
    int64_t cfa_off;
    const uint8_t *cfa_expr;
    struct cfi_rule reg[CFI_NREGS];
};

struct cfi_index_entry {
    uint64_t pc;      /* link-time start of the FDE's range */
    uint64_t fde_off; /* offset of the FDE in the section */
};

struct cfi_read_table {
    const uint8_t *data; /* section bytes (not owned) */
    size_t size;
    uint64_t vaddr;   /* link-time address of data[0] (pcrel pointers are relative to it) */
    bool debug_frame; /* .debug_frame format (CIE id 0xffffffff, 32/64-bit lengths) */
    /* .eh_frame_hdr table with datarel|sdata4 entries, or NULL */
    const uint8_t *hdr_table;
    uint64_t hdr_vaddr;
    size_t hdr_count;
    /* own index when there is no usable header (owned) */
    struct cfi_index_entry *index;
    size_t nindex;
};

/* Sets up t over .eh_frame (or .debug_frame with debug_frame) bytes at link-time address vaddr,
 * with the module's .eh_frame_hdr (hdr may be NULL). Bytes must outlive t. Returns 0, -EINVAL
 * for a section it cannot walk, -ENOMEM. */
int cfi_read_init(struct cfi_read_table *t, const uint8_t *data, size_t size, uint64_t vaddr,
                  bool debug_frame, const uint8_t *hdr, size_t hdr_size, uint64_t hdr_vaddr);
void cfi_read_free(struct cfi_read_table *t);

/* Number of FDEs reachable through the table (header count or own index). */
size_t cfi_read_count(const struct cfi_read_table *t);

/* Finds the FDE covering pc (link-time address) and evaluates its rules up to pc.
 * Returns 0, -ENOENT (no FDE covers pc) or -EINVAL (malformed CFI). */
int cfi_read_row(const struct cfi_read_table *t, uint64_t pc, struct cfi_row *row);

/* Reads 8 bytes at addr of the target; returns 0 or negative errno. */
typedef int (*cfi_read_mem_fn)(void *arg, uint64_t addr, uint64_t *val);

/* Evaluates a DWARF expression. regs/valid: register values and which are known (bit per DWARF
 * register). `initial` is pushed first when push_initial (the CFA for register rules).
 * Returns 0 or -EINVAL (unsupported op, stack under/overflow, unknown register), or read's error. */
int cfi_read_expr(const uint8_t *expr, size_t len, const uint64_t regs[CFI_NREGS], uint32_t valid,
                  bool push_initial, uint64_t initial, cfi_read_mem_fn read, void *arg, uint64_t *out);

#endif
