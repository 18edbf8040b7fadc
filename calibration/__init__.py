"""Human-labelled public data (../shared/data) read as one kind of item, split dev/test for good.

`sets` reads every labelled set into `Item`s with a fixed dev/test split; the training scripts fit
the offline judge's learned parts on dev items only, and bench/judge_quality.py reports test items.
"""
