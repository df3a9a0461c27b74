"""The log: the shop's event log as a broker delivers it. Its record format and streams, the
product catalog, the generator (arrival batches with every imperfection, and a manifest of the
ground truth), and its delivery: to a landing zone (landing) or to Kafka topics (produce).

Imports only `runtime` below it.
"""
