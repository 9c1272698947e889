/*
 * CFI encoder: the .eh_frame bytes that let gdb, perf and our own unwinder step out of JIT code.
 *
 * One CIE per architecture, one FDE per region. A frame-pointer trampoline on x86-64
 *
 *     0  [endbr64]
 *     .  push %rbp          CFA = rsp+8  -> after it: CFA = rsp+16, rbp at CFA-16
 *     .  mov  %rsp,%rbp     -> after it: CFA = rbp+16
 *     .  call *REG
 *     .  pop  %rbp          -> after it: CFA = rsp+8, rbp restored
 *     .  ret
 *
 * gets an FDE with three row changes; `readelf --debug-dump=frames` shows them as
 *
 *     LOC           CFA      rbp   ra
 *     00..          rsp+8    u     c-8
 *     push_end      rsp+16   c-16  c-8
 *     setup_end     rbp+16   c-16  c-8
 *     pop_end       rsp+8    u     c-8
 *
 * Addresses are DW_EH_PE_pcrel|DW_EH_PE_sdata4 (0x1b), so the bytes describe the code correctly
 * wherever the buffer is said to live (`buf_addr`), as long as that is within +-2 GiB of the code.
 */
#include "cfi.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* -- DWARF constants ------------------------------------------------------------------------ */

enum {
    DW_CFA_nop = 0x00,
    DW_CFA_set_loc = 0x01,
    DW_CFA_advance_loc1 = 0x02,
    DW_CFA_advance_loc2 = 0x03,
    DW_CFA_advance_loc4 = 0x04,
    DW_CFA_offset_extended = 0x05,
    DW_CFA_restore_extended = 0x06,
    DW_CFA_undefined = 0x07,
    DW_CFA_same_value = 0x08,
    DW_CFA_register = 0x09,
    DW_CFA_remember_state = 0x0a,
    DW_CFA_restore_state = 0x0b,
    DW_CFA_def_cfa = 0x0c,
    DW_CFA_def_cfa_register = 0x0d,
    DW_CFA_def_cfa_offset = 0x0e,
    DW_CFA_def_cfa_expression = 0x0f,
    DW_CFA_expression = 0x10,
    DW_CFA_offset_extended_sf = 0x11,
    DW_CFA_def_cfa_sf = 0x12,
    DW_CFA_def_cfa_offset_sf = 0x13,
    DW_CFA_val_offset = 0x14,
    DW_CFA_val_offset_sf = 0x15,
    DW_CFA_val_expression = 0x16,
    DW_CFA_GNU_window_save = 0x2d, /* also DW_CFA_AARCH64_negate_ra_state */
    DW_CFA_GNU_args_size = 0x2e,
    DW_CFA_GNU_negative_offset_extended = 0x2f,
    DW_CFA_advance_loc = 0x40, /* high 2 bits; low 6: delta */
    DW_CFA_offset = 0x80,      /* high 2 bits; low 6: register, operand: uleb factored offset */
    DW_CFA_restore = 0xc0,     /* high 2 bits; low 6: register */
};

enum {
    DW_EH_PE_absptr = 0x00,
    DW_EH_PE_udata4 = 0x03,
    DW_EH_PE_sdata4 = 0x0b,
    DW_EH_PE_pcrel = 0x10,
    DW_EH_PE_datarel = 0x30,
    DW_EH_PE_omit = 0xff,
};

/* DWARF register numbers and CIE parameters per architecture. */
struct cfi_arch {
    unsigned code_align;  /* instruction granularity; advance_loc deltas are in these units */
    int data_align;       /* factor of DW_CFA_offset operands */
    unsigned ra;          /* return address column */
    unsigned sp, fp;      /* stack and frame pointer registers */
    unsigned cie_cfa_off; /* CFA = sp + this at a call's target */
};

static const struct cfi_arch ARCH_X86_64 = {1, -8, 16, 7, 6, 8};
static const struct cfi_arch ARCH_AARCH64 = {4, -8, 30, 31, 29, 0};

static const struct cfi_arch *arch_of(enum pyjit_arch arch)
{
    switch (arch) {
    case PYJIT_ARCH_X86_64:
        return &ARCH_X86_64;
    case PYJIT_ARCH_AARCH64:
        return &ARCH_AARCH64;
    }
    return NULL;
}

/* -- Emitter -------------------------------------------------------------------------------- */

void cfi_buf_free(struct cfi_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static bool reserve(struct cfi_buf *b, size_t n)
{
    if (b->oom)
        return false;
    if (b->len + n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->len + n)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

static void u8(struct cfi_buf *b, uint8_t v)
{
    if (reserve(b, 1))
        b->p[b->len++] = v;
}

static void u32(struct cfi_buf *b, uint32_t v)
{
    if (reserve(b, 4)) {
        memcpy(b->p + b->len, &v, 4); /* little-endian hosts only (x86-64, aarch64) */
        b->len += 4;
    }
}

static void put32(struct cfi_buf *b, size_t off, uint32_t v)
{
    if (!b->oom)
        memcpy(b->p + off, &v, 4);
}

static void uleb(struct cfi_buf *b, uint64_t v)
{
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        u8(b, byte | (v ? 0x80 : 0));
    } while (v);
}

static void sleb(struct cfi_buf *b, int64_t v)
{
    for (;;) {
        uint8_t byte = v & 0x7f;
        v >>= 7; /* arithmetic shift on gcc/clang */
        bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
        u8(b, byte | (done ? 0 : 0x80));
        if (done)
            return;
    }
}

static void str(struct cfi_buf *b, const char *s)
{
    size_t n = strlen(s) + 1;
    if (reserve(b, n)) {
        memcpy(b->p + b->len, s, n);
        b->len += n;
    }
}

/* Pads the entry that started at `start` with DW_CFA_nop so its length is a multiple of 8
 * (the address size), then writes its length field (which does not count itself). */
static void close_entry(struct cfi_buf *b, size_t start)
{
    while ((b->len - start) % 8)
        u8(b, DW_CFA_nop);
    put32(b, start, (uint32_t)(b->len - start - 4));
}

/* -- CFA instructions ----------------------------------------------------------------------- */

/* Moves the row's location by `delta` code units. */
static void advance(struct cfi_buf *b, uint32_t delta)
{
    if (delta == 0)
        return;
    if (delta < 0x40) {
        u8(b, DW_CFA_advance_loc | delta);
    } else if (delta <= 0xff) {
        u8(b, DW_CFA_advance_loc1);
        u8(b, (uint8_t)delta);
    } else if (delta <= 0xffff) {
        u8(b, DW_CFA_advance_loc2);
        u8(b, delta & 0xff);
        u8(b, delta >> 8);
    } else {
        u8(b, DW_CFA_advance_loc4);
        u32(b, delta);
    }
}

/* Register `reg` saved at CFA + factored*data_align. */
static void offset(struct cfi_buf *b, unsigned reg, unsigned factored)
{
    if (reg < 0x40) {
        u8(b, DW_CFA_offset | reg);
    } else {
        u8(b, DW_CFA_offset_extended);
        uleb(b, reg);
    }
    uleb(b, factored);
}

static void def_cfa(struct cfi_buf *b, unsigned reg, unsigned off)
{
    u8(b, DW_CFA_def_cfa);
    uleb(b, reg); /* register */
    uleb(b, off); /* offset (not factored) */
}

/* -- CIE ------------------------------------------------------------------------------------ */

/*
 * CIE, 8-aligned:
 *
 *   +0   u32   length (of what follows)
 *   +4   u32   CIE id = 0 (.eh_frame)
 *   +8   u8    version = 1
 *   +9   "zR\0" augmentation: z = augmentation data follows, R = FDE pointer encoding
 *   +12  uleb  code alignment factor (1 x86-64, 4 aarch64)
 *   .    sleb  data alignment factor (-8)
 *   .    u8    return address register (16 rip, 30 x30)
 *   .    uleb  augmentation data length = 1
 *   .    u8    R: 0x1b = pcrel|sdata4
 *   .    ...   initial instructions: CFA = sp + 8 (x86-64, ra at CFA-8) / sp + 0 (aarch64)
 *   .    nops  to a multiple of 8
 */
size_t cfi_cie(struct cfi_buf *b, enum pyjit_arch arch)
{
    const struct cfi_arch *a = arch_of(arch);
    if (!a)
        a = &ARCH_X86_64; /* callers validate the arch; keep the buffer well-formed regardless */
    size_t start = b->len;
    u32(b, 0);                               /* length, patched by close_entry */
    u32(b, 0);                               /* CIE id */
    u8(b, 1);                                /* version */
    str(b, "zR");                            /* augmentation */
    uleb(b, a->code_align);                  /* code alignment factor */
    sleb(b, a->data_align);                  /* data alignment factor */
    u8(b, (uint8_t)a->ra);                   /* return address column */
    uleb(b, 1);                              /* augmentation data length */
    u8(b, DW_EH_PE_pcrel | DW_EH_PE_sdata4); /* R: FDE address encoding */
    def_cfa(b, a->sp, a->cie_cfa_off);       /* at entry: CFA = sp + 8 (x86-64) / sp (aarch64) */
    if (arch != PYJIT_ARCH_AARCH64)
        offset(b, a->ra, 1); /* return address at CFA-8 (aarch64 keeps it in x30) */
    close_entry(b, start);
    return start;
}

/* -- FDE ------------------------------------------------------------------------------------ */

/* Checks caller-supplied DW_CFA_* bytes: every opcode known and every operand complete, so a
 * broken description never reaches a debugger. */
static bool skip_uleb(const uint8_t **p, const uint8_t *end)
{
    for (int i = 0; i < 10 && *p < end; i++)
        if (!(*(*p)++ & 0x80))
            return true;
    return false;
}

static int check_cfi(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        uint8_t op = *p++;
        int ulebs = 0, block = 0;
        size_t fixed = 0;
        switch (op & 0xc0) {
        case DW_CFA_advance_loc:
        case DW_CFA_restore:
            continue;
        case DW_CFA_offset:
            ulebs = 1;
            break;
        default:
            switch (op) {
            case DW_CFA_nop:
            case DW_CFA_remember_state:
            case DW_CFA_restore_state:
            case DW_CFA_GNU_window_save:
                break;
            case DW_CFA_set_loc:
                return -EINVAL; /* an absolute address cannot be relocated with the FDE */
            case DW_CFA_advance_loc1:
                fixed = 1;
                break;
            case DW_CFA_advance_loc2:
                fixed = 2;
                break;
            case DW_CFA_advance_loc4:
                fixed = 4;
                break;
            case DW_CFA_restore_extended:
            case DW_CFA_undefined:
            case DW_CFA_same_value:
            case DW_CFA_def_cfa_register:
            case DW_CFA_def_cfa_offset:
            case DW_CFA_def_cfa_offset_sf:
            case DW_CFA_GNU_args_size:
                ulebs = 1;
                break;
            case DW_CFA_offset_extended:
            case DW_CFA_register:
            case DW_CFA_def_cfa:
            case DW_CFA_offset_extended_sf:
            case DW_CFA_def_cfa_sf:
            case DW_CFA_val_offset:
            case DW_CFA_val_offset_sf:
            case DW_CFA_GNU_negative_offset_extended:
                ulebs = 2;
                break;
            case DW_CFA_def_cfa_expression:
                block = 1;
                break;
            case DW_CFA_expression:
            case DW_CFA_val_expression:
                ulebs = 1;
                block = 1;
                break;
            default:
                return -EINVAL;
            }
        }
        if ((size_t)(end - p) < fixed)
            return -EINVAL;
        p += fixed;
        for (int i = 0; i < ulebs; i++)
            if (!skip_uleb(&p, end))
                return -EINVAL;
        if (block) {
            uint64_t len = 0;
            const uint8_t *q = p;
            if (!skip_uleb(&p, end))
                return -EINVAL;
            for (int shift = 0; q < p; shift += 7)
                len |= (uint64_t)(*q++ & 0x7f) << shift;
            if (len > (uint64_t)(end - p))
                return -EINVAL;
            p += len;
        }
    }
    return 0;
}

static int check_region(const struct cfi_arch *a, const struct pyjit_region *r)
{
    if (!r || r->size == 0 || r->size > INT32_MAX)
        return -EINVAL;
    switch (r->unwind) {
    case PYJIT_UNWIND_TRAMPOLINE:
        if (r->push_end == 0 || r->push_end >= r->setup_end || r->setup_end > r->size)
            return -EINVAL;
        if (r->pop_end && (r->pop_end <= r->setup_end || r->pop_end > r->size))
            return -EINVAL;
        if (r->push_end % a->code_align || r->setup_end % a->code_align || r->pop_end % a->code_align)
            return -EINVAL;
        return 0;
    case PYJIT_UNWIND_FP:
        return 0;
    case PYJIT_UNWIND_CFI:
        if (r->cfi_size && !r->cfi)
            return -EINVAL;
        return r->cfi_size ? check_cfi(r->cfi, r->cfi_size) : 0;
    }
    return -EINVAL;
}

/* The frame-pointer convention: CFA = fp + 16, saved fp at CFA-16, return address at CFA-8. */
static void fp_frame(struct cfi_buf *b, const struct cfi_arch *a)
{
    def_cfa(b, a->fp, 16); /* CFA = fp + 16 */
    offset(b, a->fp, 2);   /* caller's fp at CFA-16 */
    offset(b, a->ra, 1);   /* return address at CFA-8 */
}

/*
 * FDE, 8-aligned:
 *
 *   +0   u32    length (of what follows)
 *   +4   u32    CIE pointer: bytes from this field back to the CIE
 *   +8   sdata4 pc_begin, pcrel: code start - address of this field
 *   +12  sdata4 pc_range: code size
 *   +16  uleb   augmentation data length = 0
 *   +17  ...    instructions (rows for push/setup/pop, the FP rule, or the caller's bytes)
 *   .    nops   to a multiple of 8
 */
int cfi_fde(struct cfi_buf *b, size_t cie_off, enum pyjit_arch arch, const struct pyjit_region *r,
            uint64_t pc, uint64_t buf_addr)
{
    const struct cfi_arch *a = arch_of(arch);
    if (!a || cie_off > b->len)
        return -EINVAL;
    int err = check_region(a, r);
    if (err)
        return err;
    int64_t rel = (int64_t)(pc - (buf_addr + b->len + 8));
    if (rel < INT32_MIN || rel > INT32_MAX)
        return -EINVAL; /* buffer said to live too far from the code for sdata4 */

    size_t start = b->len;
    u32(b, 0);                               /* length, patched by close_entry */
    u32(b, (uint32_t)(start + 4 - cie_off)); /* CIE pointer */
    u32(b, (uint32_t)(int32_t)rel);          /* pc_begin (pcrel) */
    u32(b, (uint32_t)r->size);               /* pc_range */
    uleb(b, 0);                              /* augmentation data length */

    unsigned ca = a->code_align;
    switch (r->unwind) {
    case PYJIT_UNWIND_TRAMPOLINE:
        advance(b, r->push_end / ca);
        if (arch == PYJIT_ARCH_AARCH64) {
            /* stp x29, x30, [sp, #-16]! */
            u8(b, DW_CFA_def_cfa_offset); /* CFA = sp + 16 */
            uleb(b, 16);
            offset(b, a->fp, 2); /* x29 at CFA-16 */
            offset(b, a->ra, 1); /* x30 at CFA-8 */
        } else {
            /* push %rbp */
            u8(b, DW_CFA_def_cfa_offset); /* CFA = rsp + 16 */
            uleb(b, 16);
            offset(b, a->fp, 2); /* rbp at CFA-16 */
        }
        advance(b, (r->setup_end - r->push_end) / ca);
        u8(b, DW_CFA_def_cfa_register); /* mov sp -> fp: CFA = fp + 16 */
        uleb(b, a->fp);
        if (r->pop_end) {
            advance(b, (r->pop_end - r->setup_end) / ca);
            def_cfa(b, a->sp, a->cie_cfa_off); /* pop/ldp: CFA back to the entry rule */
            u8(b, DW_CFA_restore | a->fp);     /* fp holds the caller's value again */
            if (arch == PYJIT_ARCH_AARCH64)
                u8(b, DW_CFA_restore | a->ra); /* x30 too */
        }
        break;
    case PYJIT_UNWIND_FP:
        fp_frame(b, a);
        break;
    case PYJIT_UNWIND_CFI:
        if (r->cfi_size && reserve(b, r->cfi_size)) {
            memcpy(b->p + b->len, r->cfi, r->cfi_size);
            b->len += r->cfi_size;
        }
        break;
    }
    close_entry(b, start);
    return b->oom ? -ENOMEM : 0;
}

void cfi_end(struct cfi_buf *b)
{
    u32(b, 0); /* a zero length ends .eh_frame */
}

/* -- .eh_frame_hdr -------------------------------------------------------------------------- */

/*
 * .eh_frame_hdr with a one-entry search table (20 bytes):
 *
 *   +0   u8     version = 1
 *   +1   u8     eh_frame_ptr encoding: pcrel|sdata4 (0x1b)
 *   +2   u8     fde_count encoding: udata4 (0x03)
 *   +3   u8     table encoding: datarel|sdata4 (0x3b), relative to the header's start
 *   +4   sdata4 eh_frame_ptr: .eh_frame - address of this field
 *   +8   udata4 fde_count = 1
 *   +12  sdata4 initial location of the one FDE's code - hdr
 *   +16  sdata4 address of that FDE - hdr
 */
struct cfi_eh_frame_hdr_layout {
    uint8_t version, eh_frame_ptr_enc, fde_count_enc, table_enc;
    int32_t eh_frame_ptr;
    uint32_t fde_count;
    int32_t initial_loc, fde;
};
_Static_assert(sizeof(struct cfi_eh_frame_hdr_layout) == CFI_EH_FRAME_HDR_SIZE, "eh_frame_hdr size");

void cfi_eh_frame_hdr(uint8_t out[CFI_EH_FRAME_HDR_SIZE], uint64_t hdr_addr, uint64_t eh_frame_addr,
                      uint64_t pc, uint64_t fde_addr)
{
    struct cfi_eh_frame_hdr_layout h = {
        .version = 1,
        .eh_frame_ptr_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata4,
        .fde_count_enc = DW_EH_PE_udata4,
        .table_enc = DW_EH_PE_datarel | DW_EH_PE_sdata4,
        .eh_frame_ptr = (int32_t)(eh_frame_addr - (hdr_addr + 4)),
        .fde_count = 1,
        .initial_loc = (int32_t)(pc - hdr_addr),
        .fde = (int32_t)(fde_addr - hdr_addr),
    };
    memcpy(out, &h, sizeof(h));
}
