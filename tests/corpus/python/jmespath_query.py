# JMESPath: query a nested API response the way AWS CLI users do.
import jmespath

resp = {'reservations': [
    {'instances': [{'id': 'i-1', 'state': {'name': 'running'}, 'tags': [{'Key': 'env', 'Value': 'prod'}]},
                   {'id': 'i-2', 'state': {'name': 'stopped'}, 'tags': []}]},
    {'instances': [{'id': 'i-3', 'state': {'name': 'running'}, 'tags': [{'Key': 'env', 'Value': 'dev'}]}]}]}
running = jmespath.search("reservations[].instances[?state.name=='running'][].id", resp)
assert running == ['i-1', 'i-3'], running
envs = jmespath.search("reservations[].instances[].tags[?Key=='env'].Value[]", resp)
assert envs == ['prod', 'dev'], envs
assert jmespath.search('length(reservations[].instances[])', resp) == 3
print('running', running)
print('CORPUS-OK jmespath_query')
