"""Shipping: mixes (mix), dataset cards (card), HTML reports (report), export, the whole-loop demo; describe reads a run or mix for them."""
