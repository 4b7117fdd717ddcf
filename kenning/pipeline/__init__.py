"""The remember pipeline: pure functions from input to a write plan.

chunk -> extract -> resolve -> embed -> plan; the store applies the plan in one transaction.
"""
