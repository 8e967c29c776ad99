"""The ground floor: what one layer hands the next (cluster facts, toolkit facts, the proof contract).

Everything above imports from here and nothing here imports from above, so every import points one way:
config → platform → gpu → verify → outputs.
"""
